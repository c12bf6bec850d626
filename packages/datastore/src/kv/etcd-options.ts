import { DatastoreError } from '../errors.js';

/** How to reach etcd; the same for every etcd transport (gRPC `EtcdKVStore`, HTTP `EtcdHttpKVStore`). */
export interface EtcdKVStoreOptions {
  /** Client URLs, `http://host:port` or `https://host:port` (a bare `host:port` is http, or https with `tls`). */
  endpoints: string[];
  /** TLS material; any of it (or an https endpoint) turns TLS on. Without `ca` the system roots are used. */
  tls?: { ca?: Buffer; cert?: Buffer; key?: Buffer };
  username?: string;
  password?: string;
  /** How long a request may wait for a connection, as upstream's 10 s dial timeout. */
  dialTimeoutMs?: number;
  /** How long a request may take once connected (default 20 s). */
  requestTimeoutMs?: number;
}

export const DEFAULT_DIAL_TIMEOUT_MS = 10_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 20_000;

/** Options checked and endpoints normalised: what every transport needs before it connects. */
export interface ResolvedEtcdOptions {
  /** `http(s)://host:port`, no trailing slash; all of one scheme. */
  hosts: string[];
  secure: boolean;
  /** `etcd <hosts>`, the prefix of every error message. */
  where: string;
}

/** Validate etcd options; throws `DatastoreError('config')` for anything a connection cannot use. */
export function resolveEtcdOptions(options: EtcdKVStoreOptions): ResolvedEtcdOptions {
  const { endpoints, tls } = options;
  if (!Array.isArray(endpoints) || endpoints.length === 0) {
    throw new DatastoreError('config', 'etcd: at least one endpoint is required');
  }
  const wantTls =
    tls !== undefined && (tls.ca !== undefined || tls.cert !== undefined || tls.key !== undefined);
  const hosts = endpoints.map((e) => normalizeEndpoint(e, wantTls));
  const secure = hosts.map((h) => h.startsWith('https://'));
  if (secure.some((s) => s !== secure[0])) {
    throw new DatastoreError('config', `etcd: endpoints mix http and https: ${endpoints.join(',')}`);
  }
  if ((tls?.cert === undefined) !== (tls?.key === undefined)) {
    throw new DatastoreError('config', 'etcd: a client certificate needs its key, and a key its certificate');
  }
  if ((options.username === undefined) !== (options.password === undefined)) {
    throw new DatastoreError('config', 'etcd: username and password must be given together');
  }
  return { hosts, secure: secure[0] === true, where: `etcd ${hosts.join(',')}` };
}

function normalizeEndpoint(e: string, tls: boolean): string {
  const t = e.trim();
  if (/^https?:\/\//.test(t)) return t.replace(/\/+$/, '');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(t)) {
    throw new DatastoreError('config', `etcd endpoint ${JSON.stringify(e)}: scheme must be http or https`);
  }
  if (t === '') throw new DatastoreError('config', 'etcd: empty endpoint');
  return `${tls ? 'https' : 'http'}://${t}`;
}

/** The key that, as a range start, means "from the first key" (and as a range end, "to the last"). */
export const ZERO_KEY = Buffer.from([0]);

/** The range end that makes [start, end) cover every key with prefix `start` (etcd's rule). */
export function prefixEnd(start: Buffer): Buffer {
  if (start.length === 1 && start[0] === 0) return ZERO_KEY; // the whole keyspace
  const end = Buffer.from(start);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]!++;
      return end.subarray(0, i + 1);
    }
  }
  return ZERO_KEY;
}
