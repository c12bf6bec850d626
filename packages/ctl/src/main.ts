/**
 * The calicoctl executable: process I/O and real configuration around `runCli`. The datastore
 * client is imported when a command connects (see cli.ts), not at start-up. The configuration
 * (`-c` file, else env) names the datastore as upstream's does: etcdv3 when etcd endpoints are
 * given, else kubernetes (KUBECONFIG, the file's kubeconfig, `$HOME/.kube/config`, or in-cluster).
 */
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { readStdinSync, writeStderr, writeStdout } from '@calico-ts/api/stdio';
import type { loadClientConfig } from '@calico-ts/datastore';
import { type Connection, type ConnectOptions, runCli } from './cli.js';
import { CtlError } from './errors.js';
import type { CommandIO } from './io.js';
import type { Logger } from './log.js';
import { systemNodeHost } from './node/node-host.js';
import { systemHost } from './node/system-host.js';

// Node's deprecation notices (e.g. TLS to an etcd addressed by IP) are not for calicoctl's users.
process.noDeprecation = true;

const io: CommandIO = {
  // Standard streams by descriptor: Node's stream objects would cost the native build ~12 ms.
  stdout: writeStdout,
  stderr: writeStderr,
  stdin: async () => readStdinSync(),
  env: process.env,
  readFile: (p) => readFile(p, 'utf8'),
  statPath: async (p) => {
    try {
      return (await stat(p)).isDirectory() ? 'dir' : 'file';
    } catch {
      return undefined;
    }
  },
  readDir: (p) => readdir(p),
  writeFile: (p, text) => writeFile(p, text, { mode: 0o644 }),
};

/** An error's text; some libraries throw one with an empty message (client-node's exec plugin). */
function reasonOf(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  return message.trim() !== '' ? message : `${e instanceof Error ? e.name : 'error'} with no message`;
}

async function connect(configFile: string, log: Logger, options: ConnectOptions = {}): Promise<Connection> {
  const { createKVStore, KVDatastore, loadClientConfig } = await import('@calico-ts/datastore');
  let cfg: Awaited<ReturnType<typeof loadClientConfig>>;
  try {
    cfg = await loadClientConfig({ configFile, env: process.env, onWarning: (m) => log.warn(m) });
  } catch (e) {
    throw new CtlError('config', `Failed to create Calico API client: ${reasonOf(e)}`, { cause: e });
  }
  if (options.context) cfg = { ...cfg, k8sCurrentContext: options.context };
  log.info(`Loaded client config: datastoreType=${cfg.datastoreType}`);
  let kv: Awaited<ReturnType<typeof createKVStore>>;
  try {
    // A one-shot process: etcd's gRPC over node:http2 loads far faster than etcd3 and grpc-js. The
    // Kubernetes datastore reads the kubeconfig itself (no @kubernetes/client-node, unless the
    // kubeconfig's user needs an exec or auth-provider plugin).
    // Kubernetes datastore: endpoints named on the host as upstream's calicoctl names them, with
    // FELIX_INTERFACEPREFIX from its environment.
    const prefix = process.env.FELIX_INTERFACEPREFIX;
    kv = await createKVStore(cfg, { transport: 'http2', ...(prefix ? { interfacePrefix: prefix } : {}) });
  } catch (e) {
    throw new CtlError('config', `Failed to create Calico API client: ${reasonOf(e)}`, { cause: e });
  }
  const datastore = new KVDatastore(kv, { backend: cfg.datastoreType });
  return {
    datastore,
    kv,
    ...(cfg.kubeconfig ? { kubeconfig: cfg.kubeconfig } : {}),
    close: () => datastore.close(),
  };
}

const code = await runCli(process.argv.slice(2), {
  io,
  connect,
  nodeHost: systemNodeHost(process.env),
  systemHost: systemHost(process.env),
});
process.exitCode = code;
