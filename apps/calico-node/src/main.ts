/**
 * The calico-node executable, the one process owner of this repository's node agents: flags → a
 * health check, the start-up steps, Felix alone (`-felix`, felix-main.ts), or the whole node
 * (start-up, then Felix and BIRD) until SIGTERM/SIGINT, each ending through one shutdown helper
 * (shutdown.ts). Logs are pino JSON lines on stdout.
 * Exit status 1 with one line on stderr when it cannot start (bad flags or environment, datastore
 * unreachable, no usable address).
 */
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { configFromEnv, createKVStore, KVDatastore, mergeClientConfig } from '@calico-ts/datastore';
import { KubeHttp, loadKubeConnection } from '@calico-ts/datastore/kube';
import { parseIni, resolveWith } from '@calico-ts/felix';
import { IpamClient, IpamStore } from '@calico-ts/ipam';
import { Netlinux } from '@calico-ts/netlinux';
import { NftContext } from '@calico-ts/nftables';
import pino from 'pino';
import { parseArgs, USAGE } from './cli.js';
import { parseNodeEnv } from './env.js';
import { errorMessage, isNodeError } from './errors.js';
import { runFelix } from './felix-main.js';
import { bgpSecretProviderFor } from './file-secrets.js';
import { listHostInterfaces, reachSource } from './host-network.js';
import { CalicoNode, felixEnv } from './node-daemon.js';
import { CALICO_VERSION } from './node-resource.js';
import { runProbes } from './probes.js';
import { onShutdownSignals } from './shutdown.js';
import { runStartup } from './startup.js';

function pinoLevel(severity: string): pino.Level {
  const s = severity.toLowerCase();
  if (s === 'warning') return 'warn';
  return (['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const).find((l) => l === s) ?? 'info';
}

async function felixConfigFile(env: NodeJS.ProcessEnv): Promise<Record<string, string>> {
  const path = env.FELIX_CONFIGFILE || '/etc/calico/felix.cfg';
  try {
    return parseIni(await readFile(path, 'utf8'));
  } catch {
    return {};
  }
}

async function main(): Promise<number> {
  const cmd = parseArgs(process.argv.slice(2));
  if (cmd.kind === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (cmd.kind === 'version') {
    process.stdout.write(`${CALICO_VERSION}\n`);
    return 0;
  }
  if (cmd.kind === 'probe') {
    const failure = await runProbes(cmd.probes, { env: process.env, thresholdMs: cmd.thresholdMs });
    if (failure !== undefined) {
      process.stdout.write(`${failure}\n`);
      return 1;
    }
    return 0;
  }
  if (cmd.kind === 'felix') {
    await runFelix(cmd.configFile !== undefined ? { configFile: cmd.configFile } : {});
    return -1;
  }

  const env = parseNodeEnv(process.env, hostname());
  const log = pino(
    {
      level: pinoLevel(process.env.CALICO_STARTUP_LOGLEVEL || process.env.FELIX_LOGSEVERITYSCREEN || 'info'),
      base: { component: 'calico-node', node: env.nodeName, pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    pino.destination({ dest: 1, sync: true }),
  );
  const client = mergeClientConfig(undefined, configFromEnv(process.env).config);
  for (const w of client.warnings) log.warn({}, w);
  const configFile = await felixConfigFile(process.env);
  // Kubernetes datastore: a Pod's endpoint is named on the host with Felix's first InterfacePrefix
  // (FELIX_INTERFACEPREFIX, or the config file), so it is the interface Felix polices: the other
  // CNI's (eni…) in policy-only mode, cali… otherwise.
  const felixLocal = resolveWith({ env: felixEnv(env, process.env), file: configFile, hostname: hostname() });
  const kv = await createKVStore(client.config, {
    interfacePrefix: felixLocal.config.InterfacePrefix.join(','),
  });
  const datastore = new KVDatastore(kv, { backend: client.config.datastoreType });
  const net = new Netlinux();
  const startupLog = log.child({ component: 'startup' });
  const ipam = new IpamClient(datastore, new IpamStore(kv));
  log.info({ version: CALICO_VERSION }, 'calico-node starting');
  const { node: registered } = await runStartup(env, {
    datastore,
    interfaces: () => listHostInterfaces(net),
    reachSource: (d) => reachSource(d),
    log: startupLog,
    ipam,
  });
  if (cmd.kind === 'startup') {
    await datastore.close();
    return 0;
  }

  const nft = await NftContext.open();
  // The ip6 table's transactions run in a second libnftables context, beside the ip table's.
  const nftIp6 = env.ipv6Support ? await NftContext.open() : undefined;
  const secretProvider =
    env.networkingBackend === 'bird'
      ? await bgpSecretProviderFor(client.config, process.env, log.child({ component: 'bgp-secrets' }))
      : undefined;
  // FELIX_TYPHAK8SSERVICENAME: Typha's addresses from its Service's Endpoints.
  let kubeHttp: KubeHttp | undefined;
  const typhaEndpoints = async (namespace: string, name: string) => {
    kubeHttp ??= new KubeHttp(await loadKubeConnection({ ...client.config, datastoreType: 'kubernetes' }));
    return kubeHttp.request('GET', `/api/v1/namespaces/${namespace}/endpoints/${name}`);
  };
  const node = new CalicoNode({
    env,
    rawEnv: process.env,
    typhaEndpoints,
    configFile,
    hostname: hostname(),
    kv,
    datastore,
    nft,
    ...(nftIp6 !== undefined ? { nftIp6 } : {}),
    net,
    ipam,
    log,
    ...(secretProvider ? { secretProvider } : {}),
    ipv6Bgp: env.ipv6Support && Boolean(registered.spec.bgp?.ipv6Address),
    setLogLevel: (level) => {
      log.level = pinoLevel(level);
    },
  });
  onShutdownSignals({
    log,
    stop: () => node.stop(),
    close: [() => nft.close(), () => nftIp6?.close(), () => datastore.close()],
  });
  await node.start();
  log.info({ backend: env.networkingBackend }, 'calico-node running');
  return -1;
}

main().then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (e: unknown) => {
    process.stderr.write(`calico-node: ${errorMessage(e)}\n`);
    process.exit(isNodeError(e, 'usage') ? 2 : 1);
  },
);
