/**
 * BGP passwords from Kubernetes Secrets: the SecretProvider calico-node gives BirdBridge.
 *
 *   BirdBridge ── follow(names) ──► KubeSecretProvider ── per followed name, in NAMESPACE:
 *       ▲                             GET  /api/v1/namespaces/<ns>/secrets?fieldSelector=metadata.name=<name>
 *       │                             WATCH the same, from the list's resourceVersion
 *       └──── listener ◄── the secret's data changed (created, edited, deleted)
 *
 * API: `follow` starts a follower per new name and resolves when each has been read once, failed,
 * or `firstReadMs` passed; names no longer given are dropped (their watch aborted). `value` answers
 * from the last data seen. `kubeSecretProviderFor` picks the API connection: the datastore's on the
 * Kubernetes datastore; on etcd a kubeconfig or API endpoint when configured, else in-cluster, else
 * none (passwords from Secrets are then unavailable, which is logged).
 * Design: a list-then-watch per secret name, so a Role naming the secrets (`resourceNames`) is
 * enough: list and watch with a `metadata.name` field selector are authorised per name. A watch
 * that ends is resumed from the last resourceVersion; a refused or broken one re-lists after a
 * doubling delay. A secret that does not exist, or lacks the key, renders no password, as upstream.
 * Secret values never reach a log line or an error message: logs name the secret and its keys only,
 * and errors are described by their code (the API server's own status message for refusals).
 * Thread-safety: single-threaded; every follower is one async loop owned by this object.
 */

import type { SecretProvider } from '@calico-ts/bird-bridge';
import { type ClientConfig, type DatastoreError, isDatastoreError } from '@calico-ts/datastore';
import {
  inClusterConnection,
  type KubeConnection,
  KubeHttp,
  kubeconfigNeedsClientNode,
  loadKubeConnection,
  loadKubeConnectionWithClientNode,
} from '@calico-ts/datastore/kube';
import type { Logger } from '@calico-ts/felix';
import type { Env } from './env.js';

/** The namespace calico-node reads Secrets in without `NAMESPACE`, as upstream. */
export const DEFAULT_SECRETS_NAMESPACE = 'kube-system';

/** The two KubeHttp calls the provider makes. */
export type SecretsHttp = Pick<KubeHttp, 'request' | 'watch'> & { close?(): void };

export interface KubeSecretProviderOptions {
  readonly http: SecretsHttp;
  readonly namespace: string;
  readonly log: Logger;
  /** First wait before re-listing after a failure (doubling up to 30 s). Default 1 s. */
  readonly retryMs?: number;
  /** How long `follow` waits for a new secret's first read. Default 5 s. */
  readonly firstReadMs?: number;
}

interface SecretObject {
  metadata?: { name?: string; resourceVersion?: string };
  data?: Record<string, string>;
}

interface Follower {
  readonly name: string;
  readonly abort: AbortController;
  /** Decoded data; undefined while the secret does not exist (or was never read). */
  data: ReadonlyMap<string, string> | undefined;
  /** Resolved after the first read, whether it found the secret, missed it or failed. */
  readonly firstRead: Promise<void>;
  markRead(): void;
  read: boolean;
  /** The last thing logged about it, so a lasting state is logged once. */
  lastReport: string;
}

const MAX_RETRY_MS = 30_000;

/** A description of a failed call that carries no secret data. */
export function describeSecretError(e: unknown): string {
  if (isDatastoreError(e)) {
    if (e.code === 'unavailable') {
      const cause = (e as DatastoreError).cause as { code?: unknown } | undefined;
      return `the API server is unavailable${typeof cause?.code === 'string' ? ` (${cause.code})` : ''}`;
    }
    // Refusals carry the API server's Status message (who may not do what), never object data.
    return `${e.code}: ${e.message}`;
  }
  return 'unexpected error';
}

function decode(data: Record<string, string> | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of Object.entries(data ?? {})) {
    if (typeof v === 'string') out.set(k, Buffer.from(v, 'base64').toString('utf8'));
  }
  return out;
}

function sameData(
  a: ReadonlyMap<string, string> | undefined,
  b: ReadonlyMap<string, string> | undefined,
): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

export class KubeSecretProvider implements SecretProvider {
  readonly #o: KubeSecretProviderOptions;
  readonly #followers = new Map<string, Follower>();
  readonly #listeners = new Set<() => void>();
  #closed = false;

  constructor(opts: KubeSecretProviderOptions) {
    this.#o = opts;
  }

  get namespace(): string {
    return this.#o.namespace;
  }

  async follow(names: readonly string[]): Promise<void> {
    if (this.#closed) return;
    const wanted = new Set(names);
    for (const [name, f] of this.#followers) {
      if (!wanted.has(name)) {
        f.abort.abort();
        this.#followers.delete(name);
        this.#o.log.info({ secret: this.#id(name) }, 'BGP password secret no longer referenced; not watched');
      }
    }
    const fresh: Follower[] = [];
    for (const name of wanted) {
      if (this.#followers.has(name)) continue;
      const f = this.#newFollower(name);
      this.#followers.set(name, f);
      fresh.push(f);
      void this.#run(f);
    }
    if (fresh.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(fresh.map((f) => f.firstRead)),
      new Promise<void>((r) => {
        timer = setTimeout(r, this.#o.firstReadMs ?? 5000);
      }),
    ]);
    clearTimeout(timer);
  }

  value(name: string, key: string): string | undefined {
    return this.#followers.get(name)?.data?.get(key);
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const f of this.#followers.values()) f.abort.abort();
    this.#followers.clear();
    this.#listeners.clear();
    this.#o.http.close?.();
  }

  /** The names followed now, sorted. */
  followed(): string[] {
    return [...this.#followers.keys()].sort();
  }

  #id(name: string): string {
    return `${this.#o.namespace}/${name}`;
  }

  #newFollower(name: string): Follower {
    let markRead = () => {};
    const firstRead = new Promise<void>((r) => {
      markRead = r;
    });
    const f: Follower = {
      name,
      abort: new AbortController(),
      data: undefined,
      firstRead,
      read: false,
      lastReport: '',
      markRead: () => {
        f.read = true;
        markRead();
      },
    };
    return f;
  }

  #report(f: Follower, level: 'info' | 'warn', what: string, fields: Record<string, unknown> = {}): void {
    if (what === f.lastReport) return;
    f.lastReport = what;
    this.#o.log[level]({ secret: this.#id(f.name), ...fields }, what);
  }

  /** Records what the API server holds now; tells the listeners when it changed after the first read. */
  #set(f: Follower, obj: SecretObject | undefined): void {
    if (f.abort.signal.aborted) return;
    const data = obj === undefined ? undefined : decode(obj.data);
    if (data === undefined)
      this.#report(f, 'warn', 'BGP password secret not found; its peers get no password');
    else this.#report(f, 'info', 'BGP password secret read', { keys: [...data.keys()].sort() });
    if (sameData(f.data, data)) return;
    f.data = data;
    if (f.read) for (const l of [...this.#listeners]) l();
  }

  async #run(f: Follower): Promise<void> {
    const { http, namespace } = this.#o;
    const signal = f.abort.signal;
    const base = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`;
    const selector = `fieldSelector=${encodeURIComponent(`metadata.name=${f.name}`)}`;
    let delay = this.#o.retryMs ?? 1000;
    while (!signal.aborted) {
      try {
        const list = await http.request<{ metadata?: { resourceVersion?: string }; items?: SecretObject[] }>(
          'GET',
          `${base}?${selector}`,
        );
        if (signal.aborted) return;
        this.#set(
          f,
          list.items?.find((s) => s.metadata?.name === f.name),
        );
        f.markRead();
        delay = this.#o.retryMs ?? 1000;
        let rv = list.metadata?.resourceVersion ?? '';
        // Watch from the list's version; a stream the server ends is resumed from the last event.
        for (let relist = false; !relist && !signal.aborted; ) {
          const path = `${base}?watch=1&${selector}&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(rv)}`;
          const opened = Date.now();
          let events = 0;
          for await (const ev of http.watch(path, signal)) {
            events++;
            const obj = ev.object as SecretObject;
            if (ev.type === 'ERROR') {
              relist = true;
              break;
            }
            if (obj.metadata?.resourceVersion) rv = obj.metadata.resourceVersion;
            if (ev.type === 'ADDED' || ev.type === 'MODIFIED') this.#set(f, obj);
            else if (ev.type === 'DELETED') this.#set(f, undefined);
          }
          // A server that ends watches at once would make this a busy loop: pause, then list again.
          if (!relist && events === 0 && Date.now() - opened < 1000) {
            await sleep(delay, signal);
            relist = true;
          }
        }
      } catch (e) {
        if (signal.aborted) return;
        f.markRead();
        // A compacted resourceVersion is routine: list again at once.
        if (isDatastoreError(e, 'compacted')) continue;
        this.#report(f, 'warn', 'cannot read BGP password secret; will retry', {
          error: describeSecretError(e),
        });
        await sleep(delay, signal);
        delay = Math.min(delay * 2, MAX_RETRY_MS);
      }
    }
  }
}

/** Where the Kubernetes API connection for Secrets comes from. */
export type SecretsConnectionSource = 'datastore' | 'kubeconfig' | 'in-cluster' | 'none';

/**
 * The datastore's own connection on the Kubernetes datastore; on etcd a configured kubeconfig or
 * API endpoint, else in-cluster when the service-account environment is there, else none.
 */
export function secretsConnectionSource(cfg: ClientConfig, env: Env): SecretsConnectionSource {
  if (cfg.datastoreType === 'kubernetes') return 'datastore';
  if (cfg.kubeconfig || cfg.k8sAPIEndpoint) return 'kubeconfig';
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) return 'in-cluster';
  return 'none';
}

async function connectionFor(cfg: ClientConfig, env: Env): Promise<KubeConnection> {
  if (cfg.kubeconfig) {
    const { readFile } = await import('node:fs/promises');
    const text = await readFile(cfg.kubeconfig, 'utf8').catch(() => undefined);
    if (text !== undefined && kubeconfigNeedsClientNode(text, cfg.k8sCurrentContext)) {
      return loadKubeConnectionWithClientNode(cfg.kubeconfig, cfg.k8sCurrentContext);
    }
  }
  return loadKubeConnection(cfg, env as NodeJS.ProcessEnv);
}

/**
 * The provider for this node's configuration, reading Secrets in `NAMESPACE` (default
 * kube-system), or undefined when there is no Kubernetes API to read them from (logged). A
 * connection that cannot be loaded on etcd is logged and leaves passwords unavailable; on the
 * Kubernetes datastore the datastore itself already loaded the same connection.
 */
export async function kubeSecretProviderFor(
  cfg: ClientConfig,
  env: Env,
  log: Logger,
  options: { retryMs?: number; firstReadMs?: number } = {},
): Promise<KubeSecretProvider | undefined> {
  const namespace = env.NAMESPACE || DEFAULT_SECRETS_NAMESPACE;
  const source = secretsConnectionSource(cfg, env);
  if (source === 'none') {
    log.info(
      {},
      'no Kubernetes API configured (kubeconfig, K8S_API_ENDPOINT or in-cluster) and no CALICO_BGP_SECRETS_DIR: ' +
        'BGP passwords from Secrets are unavailable, and sessions that need one are kept down',
    );
    return undefined;
  }
  let conn: KubeConnection;
  try {
    conn =
      source === 'in-cluster'
        ? await inClusterConnection(env as NodeJS.ProcessEnv)
        : await connectionFor(cfg, env);
  } catch (e) {
    log.warn(
      { source, error: e instanceof Error ? e.message : String(e) },
      'cannot load the Kubernetes API connection: BGP passwords from Secrets are unavailable',
    );
    return undefined;
  }
  log.info(
    { namespace, source, server: conn.server },
    'BGP password secrets are read from the Kubernetes API',
  );
  return new KubeSecretProvider({ http: new KubeHttp(conn), namespace, log, ...options });
}
