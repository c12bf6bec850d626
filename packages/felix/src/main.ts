/**
 * `calico-felix [--config-file F]`: Felix as a program. Reads the environment (`FELIX_*`) and the
 * config file, connects to the datastore, programs this host's network namespace, and runs until
 * SIGTERM or SIGINT, then exits 0 leaving the programmed rules and routes in place.
 * Exit status 1 with one line on stderr when it cannot start (bad arguments, unreadable config
 * file, datastore configuration, libnftables missing).
 */
import { createKVStore, KVDatastore } from '@calico-ts/datastore';
import { Netlinux } from '@calico-ts/netlinux';
import { NftContext } from '@calico-ts/nftables';
import pino from 'pino';
import { clientConfigOf } from './config/derived.js';
import { readLocalSources, resolveWith } from './config/load-config.js';
import { FelixDaemon, felixKeySources } from './daemon/felix-daemon.js';
import type { StatusStore } from './daemon/status-reporter.js';
import { errorMessage } from './logging.js';

declare const __CALICO_TS_VERSION__: string | undefined;
const VERSION = typeof __CALICO_TS_VERSION__ === 'string' ? __CALICO_TS_VERSION__ : 'dev';

const USAGE = `Usage: calico-felix [--config-file <file>]

Felix, Calico's per-node agent. Configuration comes from FELIX_<PARAM> environment variables,
the config file (default /etc/calico/felix.cfg) and the FelixConfiguration resources.

Options:
  -c, --config-file <file>  Felix config file (INI)
      --version             Print the version and exit
  -h, --help                Print this help and exit
`;

/** pino's level for a Felix LogSeverityScreen value. */
export function pinoLevel(severity: string): pino.Level {
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

export function parseArgs(argv: readonly string[]): { configFile?: string; version?: true; help?: true } {
  const out: { configFile?: string; version?: true; help?: true } = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--version' || a === '-v') out.version = true;
    else if (a === '--help' || a === '-h') out.help = true;
    else if (a === '--config-file' || a === '-c') {
      const f = argv[++i];
      if (f === undefined || f === '') throw new Error(`${a} needs a file name`);
      out.configFile = f;
    } else if (a.startsWith('--config-file=')) out.configFile = a.slice('--config-file='.length);
    else throw new Error(`unknown argument ${a}`);
  }
  return out;
}

async function main(): Promise<void> {
  let args: ReturnType<typeof parseArgs>;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`calico-felix: ${errorMessage(e)}\n${USAGE}`);
    process.exit(1);
  }
  if (args.help) {
    process.stdout.write(USAGE);
    return;
  }
  if (args.version) {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  const local = await readLocalSources(args.configFile !== undefined ? { configFile: args.configFile } : {});
  const initial = resolveWith(local).config;
  const log = pino(
    {
      level: pinoLevel(initial.LogSeverityScreen),
      base: { component: 'felix', pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    pino.destination({ dest: 1, sync: true }),
  );
  if (initial.TyphaAddr !== '' || initial.TyphaK8sServiceName !== '') {
    log.warn({}, 'Typha is followed by calico-node; calico-felix alone follows the datastore itself');
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
      log.level = pinoLevel(level);
    },
  });
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    daemon
      .stop()
      .then(() => Promise.allSettled([nft.close(), nftIp6?.close(), datastore.close()]))
      .then(() => process.exit(0))
      .catch((e: unknown) => {
        log.error({ err: errorMessage(e) }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  log.info({ version: VERSION }, 'Felix starting');
  await daemon.start();
}

main().catch((e: unknown) => {
  process.stderr.write(`calico-felix: ${errorMessage(e)}\n`);
  process.exit(1);
});
