/**
 * The plugin service (protocol.ts): runs the invocations `calico` and `calico-ipam` hand it, with
 * the same code and the same effects as a direct run (effects.ts), in a process that stays warm:
 *
 * - one datastore client per distinct client configuration (what the network config and the
 *   environment name), opened on first use and kept; reopened after a transient failure
 *   (`try-again`) and after `clientMaxAgeMs`, so certificate rotation is picked up;
 * - invocations run concurrently, but those of one container in turn (in-turn.ts); the host IPAM lock is queued inside the process and still taken
 *   on the lock file, so direct runs on the same host take turns with the service;
 * - each invocation's log lines are collected and returned, so the runtime sees them on the
 *   plugin's stderr exactly as from a direct run.
 *
 * It declines (the executable then runs the invocation itself) a caller in another network
 * namespace, and one whose CNI_NETNS it cannot see.
 *
 * Hosted by calico-node (`CALICO_CNI_SERVICE_SOCKET`) or run alone as `calico --serve[=SOCKET]`.
 */
import { existsSync } from 'node:fs';
import { chmod, lstat, mkdir, unlink } from 'node:fs/promises';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { dirname } from 'node:path';
import { type Logger, loggerOf, NOOP_LOGGER } from '@calico-ts/api/log';
import { writeStderr } from '@calico-ts/api/stdio';
import type { KubeHttp } from '@calico-ts/datastore/kube';
import { openKubeOnce, pluginEffects } from '../effects.js';
import { isCniPluginError, messageOf } from '../errors.js';
import { borrowBackend, type PluginBackend } from '../io/backend.js';
import { FileLock, QueuedLock } from '../io/host-lock.js';
import { type KubeReader, memoizedReader } from '../io/kube.js';
import { runPlugin } from '../plugin.js';
import type { Env } from '../spec/env.js';
import { formatJson, toCniErrorObject } from '../spec/error.js';
import type { NetConf } from '../spec/netconf.js';
import { InTurn } from './in-turn.js';
import {
  DEFAULT_SERVICE_SOCKET,
  MAX_MESSAGE_BYTES,
  ownNetnsId,
  PROTOCOL_VERSION,
  type ServiceReply,
  type ServiceRequest,
} from './protocol.js';

export interface PluginServiceOptions {
  socketPath: string;
  /** The version `-v` and VERSION would print. */
  version: string;
  /** The service's own messages (start, stop, refused requests). */
  log?: Logger;
  /** Datastore clients older than this are reopened on next use. Default 10 minutes. */
  clientMaxAgeMs?: number;
}

export interface PluginService {
  readonly socketPath: string;
  /** Invocations answered so far. */
  readonly served: number;
  /** Stops accepting, waits for the invocations in progress, closes the datastore clients. */
  close(): Promise<void>;
}

export async function startPluginService(o: PluginServiceOptions): Promise<PluginService> {
  const log = o.log ?? NOOP_LOGGER;
  const netns = ownNetnsId();
  const clients = new ClientCache(o.clientMaxAgeMs ?? 600_000);
  const kubeClients = new KubeClientCache(o.clientMaxAgeMs ?? 600_000);
  const lock = new QueuedLock(new FileLock({ log }));
  const inFlight = new Set<Promise<void>>();
  const perContainer = new InTurn();
  let closing = false;
  let served = 0;

  async function invoke(req: ServiceRequest): Promise<ServiceReply> {
    if (closing) return { v: PROTOCOL_VERSION, declined: 'the service is stopping' };
    if (req.netns !== netns) {
      return { v: PROTOCOL_VERSION, declined: 'the caller is in another network namespace' };
    }
    // A service in a container may not see the runtime's namespace files (/var/run/netns, or
    // /proc/<pid> without the host's PID namespace): then the caller does it, where they exist.
    const podNetns = req.env.CNI_NETNS;
    if (podNetns && !existsSync(podNetns)) {
      return { v: PROTOCOL_VERSION, declined: `CNI_NETNS ${podNetns} is not visible to the service` };
    }
    const lines: string[] = [];
    const effects = pluginEffects({
      program: req.program,
      version: o.version,
      logSink: (line) => lines.push(line),
      ...(req.pid > 0 ? { pid: req.pid } : {}),
      readStdin: async () => req.stdin,
      selfPath: req.self,
      openBackend: (conf, env, l) => clients.open(conf, env, l),
      openKube: openKubeOnce((conf, env) => kubeClients.open(conf, env)),
      lock,
    });
    try {
      // One container's invocations of one program take turns (in-turn.ts): a DEL waits for the
      // ADD still running. Per program: `calico` running here may exec a `calico-ipam` that hands
      // its invocation, of the same container, back to this service while `calico` waits for it.
      const container = req.env.CNI_CONTAINERID
        ? `${req.program} ${req.env.CNI_CONTAINERID} ${req.env.CNI_IFNAME ?? ''}`
        : undefined;
      const out = await perContainer.run(container, () =>
        runPlugin(req.program, [], req.env, effects, o.version),
      );
      served++;
      return { v: PROTOCOL_VERSION, stdout: out.stdout, stderr: lines.join(''), exitCode: out.exitCode };
    } catch (e) {
      // runPlugin reports its own failures; this is a defect, still answered as the plugin would.
      lines.push(`service: ${messageOf(e)}\n`);
      return {
        v: PROTOCOL_VERSION,
        stdout: formatJson(toCniErrorObject(e)),
        stderr: lines.join(''),
        exitCode: 1,
      };
    }
  }

  const onConnection = (sock: Socket) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let started = false;
    sock.on('error', () => {});
    sock.on('data', (b: Buffer) => {
      if (started) return;
      size += b.length;
      if (size > MAX_MESSAGE_BYTES) {
        started = true;
        log.warn(`refused a request larger than ${MAX_MESSAGE_BYTES} bytes`);
        sock.destroy();
        return;
      }
      chunks.push(b);
      if (b.indexOf(10) === -1) return;
      started = true;
      const text = Buffer.concat(chunks).toString('utf8');
      const work = (async () => {
        const req = parseRequest(text);
        const reply: ServiceReply =
          typeof req === 'string' ? { v: PROTOCOL_VERSION, declined: req } : await invoke(req);
        if (typeof req === 'string') log.warn(`declined a request: ${req}`);
        sock.end(`${JSON.stringify(reply)}\n`);
      })();
      inFlight.add(work);
      void work.finally(() => inFlight.delete(work));
    });
  };

  await clearStaleSocket(o.socketPath);
  await mkdir(dirname(o.socketPath), { recursive: true });
  const server = createServer(onConnection);
  // Whoever may run the plugin (root) may use the service; nobody else. The socket is bound under
  // umask 0177, so it is 0600 from the moment it exists: a chmod after listen left a window in
  // which the socket already answered with the mode the process's umask gave it.
  const umask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(o.socketPath, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } finally {
    process.umask(umask);
  }
  await chmod(o.socketPath, 0o600);
  server.on('error', (e) => log.error(`plugin service: ${messageOf(e)}`));

  return {
    socketPath: o.socketPath,
    get served() {
      return served;
    },
    async close() {
      if (closing) return;
      closing = true;
      await closeServer(server);
      await Promise.allSettled([...inFlight]);
      await clients.closeAll();
      kubeClients.closeAll();
      await unlink(o.socketPath).catch(() => {});
    },
  };
}

/** A request, or why it is not one. */
export function parseRequest(text: string): ServiceRequest | string {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return 'the request is not JSON';
  }
  const r = v as Partial<ServiceRequest> | null;
  if (r === null || typeof r !== 'object') return 'the request is not an object';
  if (r.v !== PROTOCOL_VERSION) return `protocol version ${String(r.v)} is not ${PROTOCOL_VERSION}`;
  if (r.program !== 'calico' && r.program !== 'calico-ipam') return 'program must be calico or calico-ipam';
  if (typeof r.stdin !== 'string') return 'stdin must be a string';
  if (typeof r.netns !== 'string') return 'netns must be a string';
  if (r.self !== undefined && typeof r.self !== 'string') return 'self must be a string';
  const env = r.env as unknown;
  if (env === null || typeof env !== 'object' || Array.isArray(env)) return 'env must be an object';
  for (const [k, val] of Object.entries(env)) {
    if (typeof val !== 'string') return `env.${k} must be a string`;
  }
  return {
    v: PROTOCOL_VERSION,
    program: r.program,
    env: env as Record<string, string>,
    stdin: r.stdin,
    netns: r.netns,
    pid: typeof r.pid === 'number' ? r.pid : 0,
    ...(r.self !== undefined ? { self: r.self } : {}),
  };
}

interface CachedClient {
  openedAt: number;
  backend: Promise<PluginBackend>;
  users: number;
  retired: boolean;
}

/** Open datastore clients by configuration, lent to invocations and closed when retired and unused. */
class ClientCache {
  readonly #maxAgeMs: number;
  readonly #entries = new Map<string, CachedClient>();

  constructor(maxAgeMs: number) {
    this.#maxAgeMs = maxAgeMs;
  }

  async open(conf: NetConf, env: Env, log: Logger): Promise<PluginBackend> {
    const { interfacePrefixOf, loadBackendConfig, openCalicoBackendWith } = await import(
      '../io/calico-backend.js'
    );
    const cfg = await loadBackendConfig(conf, env, log);
    // The interface prefix changes what the Kubernetes datastore reads back: one client per both.
    const prefix = interfacePrefixOf(env);
    const key = JSON.stringify([cfg, prefix.interfacePrefix ?? '']);
    let entry = this.#entries.get(key);
    if (entry && Date.now() - entry.openedAt > this.#maxAgeMs) {
      this.#retire(key, entry);
      entry = undefined;
    }
    if (!entry) {
      const fresh: CachedClient = {
        openedAt: Date.now(),
        backend: openCalicoBackendWith(cfg, { mirrorHosts: true, ...prefix }),
        users: 0,
        retired: false,
      };
      this.#entries.set(key, fresh);
      fresh.backend.catch(() => this.#retire(key, fresh));
      entry = fresh;
    }
    const e = entry;
    const backend = await e.backend;
    e.users++;
    const lent = borrowBackend(backend) as unknown as Record<string, (...a: unknown[]) => unknown>;
    for (const name of Object.keys(lent)) {
      const f = lent[name]!;
      if (name === 'close' || typeof f !== 'function') continue; // endpointsOnPods: a fact
      lent[name] = (...a: unknown[]) => {
        const out = f(...a);
        if (!(out instanceof Promise)) return out; // a hint such as prefetchAssign: nothing to watch
        return out.catch((err: unknown) => {
          // The datastore could not be reached (or changed under us): start over with a new client.
          if (isCniPluginError(err, 'try-again')) this.#retire(key, e);
          throw err;
        });
      };
    }
    let returned = false;
    lent.close = async () => {
      if (returned) return;
      returned = true;
      e.users--;
      if (e.retired && e.users === 0) await closeQuietly(e);
    };
    return lent as unknown as PluginBackend;
  }

  #retire(key: string, e: CachedClient): void {
    if (this.#entries.get(key) === e) this.#entries.delete(key);
    if (e.retired) return;
    e.retired = true;
    if (e.users === 0) void closeQuietly(e);
  }

  async closeAll(): Promise<void> {
    const all = [...this.#entries.values()];
    this.#entries.clear();
    await Promise.all(
      all.map((e) => {
        e.retired = true;
        return closeQuietly(e);
      }),
    );
  }
}

interface CachedKube {
  openedAt: number;
  http: Promise<KubeHttp>;
  users: number;
  retired: boolean;
}

/**
 * Open Kubernetes API connections by settings, lent to invocations (each with its own memoized
 * reads). Reopened after `maxAgeMs` (so a rotated token in the kubeconfig is picked up) and after
 * the API server could not be reached.
 */
class KubeClientCache {
  readonly #maxAgeMs: number;
  readonly #entries = new Map<string, CachedKube>();

  constructor(maxAgeMs: number) {
    this.#maxAgeMs = maxAgeMs;
  }

  async open(conf: NetConf, env: Env): Promise<KubeReader> {
    const { KubeApiReader, kubeApiSettings, openKubeHttp } = await import('../io/kube-api.js');
    const settings = kubeApiSettings(conf.kubeApi, env);
    const key = JSON.stringify([settings, env.KUBERNETES_SERVICE_HOST, env.KUBERNETES_SERVICE_PORT]);
    let entry = this.#entries.get(key);
    if (entry && Date.now() - entry.openedAt > this.#maxAgeMs) {
      this.#retire(key, entry);
      entry = undefined;
    }
    if (!entry) {
      const fresh: CachedKube = {
        openedAt: Date.now(),
        http: openKubeHttp(settings, env),
        users: 0,
        retired: false,
      };
      this.#entries.set(key, fresh);
      fresh.http.catch(() => this.#retire(key, fresh));
      entry = fresh;
    }
    const e = entry;
    const reader = new KubeApiReader(await e.http, false);
    e.users++;
    const watch = <T>(p: Promise<T>): Promise<T> =>
      p.catch((err: unknown) => {
        if (isCniPluginError(err, 'try-again')) this.#retire(key, e);
        throw err;
      });
    let returned = false;
    return memoizedReader({
      server: reader.server,
      getPod: (ns, name) => watch(reader.getPod(ns, name)),
      getNamespace: (name) => watch(reader.getNamespace(name)),
      close: async () => {
        if (returned) return;
        returned = true;
        e.users--;
        if (e.retired && e.users === 0)
          void e.http.then(
            (h) => h.close(),
            () => {},
          );
      },
    });
  }

  #retire(key: string, e: CachedKube): void {
    if (this.#entries.get(key) === e) this.#entries.delete(key);
    if (e.retired) return;
    e.retired = true;
    if (e.users === 0)
      void e.http.then(
        (h) => h.close(),
        () => {},
      );
  }

  closeAll(): void {
    for (const [key, e] of [...this.#entries]) this.#retire(key, e);
  }
}

async function closeQuietly(e: CachedClient): Promise<void> {
  try {
    await (await e.backend).close();
  } catch {
    // failed to open, or already broken: nothing to close
  }
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Removes a socket file nobody listens on; refuses to replace a live service or a non-socket. */
async function clearStaleSocket(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = (await lstat(path)).isSocket();
  } catch {
    return;
  }
  if (!isSocket) throw new Error(`${path} exists and is not a socket; not replacing it`);
  const alive = await new Promise<boolean>((resolve) => {
    const c = createConnection({ path });
    c.on('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.on('error', () => resolve(false));
  });
  if (alive) throw new Error(`another plugin service is listening on ${path}`);
  await unlink(path);
}

/**
 * `calico --serve[=SOCKET]`: the service alone, until SIGTERM or SIGINT. Returns the exit code.
 */
export async function serveFromCommandLine(args: readonly string[], version: string): Promise<number> {
  const first = args[0] ?? '';
  const socketPath = first.includes('=')
    ? first.slice(first.indexOf('=') + 1)
    : (args[1] ?? DEFAULT_SERVICE_SOCKET);
  const say = (m: string) => writeStderr(`${new Date().toISOString()} calico plugin service: ${m}\n`);
  let service: PluginService;
  try {
    service = await startPluginService({ socketPath, version, log: loggerOf((_level, m) => say(m)) });
  } catch (e) {
    say(`cannot start on ${socketPath}: ${messageOf(e)}`);
    return 1;
  }
  say(`listening on ${socketPath}`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  say(`stopping after ${service.served} invocations`);
  await service.close();
  return 0;
}
