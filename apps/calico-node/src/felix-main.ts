/**
 * `calico-node -felix [-config-file F]`: Felix alone, as upstream's `calico-node -felix`. Reads the
 * environment (`FELIX_*`) and the config file (default /etc/calico/felix.cfg), connects to the
 * datastore Felix's configuration names, programs this host's network namespace, and runs until
 * SIGTERM or SIGINT, then exits 0 leaving the programmed rules and routes in place. No start-up
 * steps, no BIRD: the node must be registered already.
 *
 *   FELIX_* + config file ──► resolveWith ──► datastore (clientConfigOf) ──► FelixDaemon
 *   libnftables contexts (ip, and ip6 with Ipv6Support) ──┘   SIGTERM ──► onShutdownSignals
 *
 * Felix's library (`@calico-ts/felix`) has no process of its own: this is its one owner beside
 * the whole node.
 */
import { createKVStore, KVDatastore } from '@calico-ts/datastore';
import {
  clientConfigOf,
  FelixDaemon,
  felixKeySources,
  readLocalSources,
  resolveWith,
  type StatusStore,
} from '@calico-ts/felix';
import { Netlinux } from '@calico-ts/netlinux';
import { NftContext } from '@calico-ts/nftables';
import pino from 'pino';
import { CALICO_VERSION } from './node-resource.js';
import { onShutdownSignals } from './shutdown.js';

/** pino's level for a Felix LogSeverityScreen value. */
export function felixPinoLevel(severity: string): pino.Level {
  switch (severity.toUpperCase()) {
    case 'TRACE':
      return 'trace';
    case 'DEBUG':
      return 'debug';
    case 'WARNING':
    case 'WARN':
      return 'warn';
    case 'ERROR':
      return 'error';
    case 'FATAL':
      return 'fatal';
    default:
      return 'info';
  }
}

/** Runs Felix until a signal ends the process. */
export async function runFelix(opts: { readonly configFile?: string }): Promise<void> {
  const local = await readLocalSources(opts.configFile !== undefined ? { configFile: opts.configFile } : {});
  const initial = resolveWith(local).config;
  const log = pino(
    {
      level: felixPinoLevel(initial.LogSeverityScreen),
      base: { component: 'felix', pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    pino.destination({ dest: 1, sync: true }),
  );
  if (initial.TyphaAddr !== '' || initial.TyphaK8sServiceName !== '') {
    log.warn({}, 'Typha is followed by the whole calico-node; Felix alone follows the datastore itself');
  }
  const clientConfig = clientConfigOf(initial);
  // On the Kubernetes datastore: KUBECONFIG, else the pod's service account (in-cluster).
  if (clientConfig.datastoreType === 'kubernetes' && process.env.KUBECONFIG) {
    clientConfig.kubeconfig = process.env.KUBECONFIG;
  }
  // Kubernetes datastore: a Pod's endpoint is named on the host with this Felix's first
  // InterfacePrefix, so it is the interface Felix polices.
  const kv = await createKVStore(clientConfig, { interfacePrefix: initial.InterfacePrefix.join(',') });
  const backend = clientConfig.datastoreType;
  const datastore = new KVDatastore(kv, { backend });
  const nft = await NftContext.open();
  // The ip6 table's transactions run in a second libnftables context, beside the ip table's.
  const nftIp6 = initial.Ipv6Support ? await NftContext.open() : undefined;
  const daemon = new FelixDaemon({
    local,
    datastore,
    // Felix's status keys exist in etcd only; the Kubernetes datastore has no place for them.
    ...(backend === 'kubernetes' ? {} : { statusStore: kv as StatusStore }),
    probe: () => kv.revision(),
    ...felixKeySources(kv, backend),
    nft,
    ...(nftIp6 !== undefined ? { nftIp6 } : {}),
    net: new Netlinux(),
    log,
    setLogLevel: (level) => {
      log.level = felixPinoLevel(level);
    },
  });
  onShutdownSignals({
    log,
    stop: () => daemon.stop(),
    close: [() => nft.close(), () => nftIp6?.close(), () => datastore.close()],
  });
  log.info({ version: CALICO_VERSION }, 'Felix starting');
  await daemon.start();
}
