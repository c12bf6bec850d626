/**
 * In-memory `PluginBackend` with the same observable semantics as the etcd-backed one: workload
 * endpoints by namespace/name with uid and resourceVersion, IPAM handles that own addresses drawn
 * in order from the first enabled pool of the family (block prefix from `blockSize`), and failure
 * injection per method (`failNext`, `failAlways`) for tests of the undo paths.
 */
import { isIPv4 } from 'node:net';
import { selectorMatches } from '@calico-ts/api';
import { CniPluginError } from '../errors.js';
import type {
  AssignIpRequest,
  AutoAssignRequest,
  DeletePrecondition,
  PluginBackend,
  PoolCapacity,
  Readiness,
  WorkloadEndpoint,
  WriteEndpointOptions,
} from './backend.js';

export interface FakePool {
  name: string;
  cidr: string;
  blockSize?: number;
  disabled?: boolean;
  /** Matched against the request's namespace labels when no pools are requested (as IPAM does). */
  namespaceSelector?: string;
}

interface Allocation {
  address: string;
  cidr: string;
  handleId: string;
  attrs: Record<string, string>;
}

export type BackendMethod = Exclude<keyof PluginBackend, 'close'>;

export class FakeBackend implements PluginBackend {
  clusterReady: boolean | 'missing' = true;
  pools: FakePool[] = [{ name: 'default-ipv4-ippool', cidr: '198.19.0.0/16', blockSize: 26 }];
  readonly endpoints = new Map<string, WorkloadEndpoint>();
  readonly profiles = new Set<string>();
  readonly allocations = new Map<string, Allocation>();
  readonly calls: string[] = [];
  /** Every autoAssign request, in order. */
  readonly autoAssigns: AutoAssignRequest[] = [];
  closed = false;
  #revision = 1;
  #uid = 0;
  readonly #failures = new Map<BackendMethod, { error: CniPluginError; times: number }>();

  /** The next `times` calls of `method` throw `error` (default: a `datastore-failed`). */
  failNext(method: BackendMethod, error?: CniPluginError, times = 1): void {
    this.#failures.set(method, {
      error: error ?? new CniPluginError('datastore-failed', `injected failure in ${method}`),
      times,
    });
  }

  failAlways(method: BackendMethod, error?: CniPluginError): void {
    this.failNext(method, error, Number.POSITIVE_INFINITY);
  }

  #enter(method: BackendMethod): void {
    this.calls.push(method);
    const f = this.#failures.get(method);
    if (f && f.times > 0) {
      f.times--;
      throw f.error;
    }
  }

  async readiness(): Promise<Readiness> {
    this.#enter('readiness');
    if (this.clusterReady === 'missing')
      return { ready: false, reason: 'ClusterInformation "default" does not exist' };
    return this.clusterReady ? { ready: true } : { ready: false, reason: 'datastoreReady is false' };
  }

  async getWorkloadEndpoint(namespace: string, name: string): Promise<WorkloadEndpoint | undefined> {
    this.#enter('getWorkloadEndpoint');
    const w = this.endpoints.get(`${namespace}/${name}`);
    return w ? structuredClone(w) : undefined;
  }

  async writeWorkloadEndpoint(
    wep: WorkloadEndpoint,
    opts: WriteEndpointOptions = {},
  ): Promise<WorkloadEndpoint> {
    this.#enter('writeWorkloadEndpoint');
    const key = `${wep.metadata.namespace}/${wep.metadata.name}`;
    const prev = this.endpoints.get(key);
    // A create guarded by an IPAM handle needs the handle (here: an address it holds).
    const handle = opts.ipamHandle;
    if (!prev && handle !== undefined && ![...this.allocations.values()].some((a) => a.handleId === handle)) {
      throw new CniPluginError(
        'try-again',
        `IPAM handle ${handle} no longer exists: not writing WorkloadEndpoint ${key}`,
      );
    }
    const stored = structuredClone(wep);
    stored.metadata.uid = prev?.metadata.uid ?? `uid-${++this.#uid}`;
    stored.metadata.creationTimestamp = prev?.metadata.creationTimestamp ?? new Date(0).toISOString();
    stored.metadata.resourceVersion = String(++this.#revision);
    this.endpoints.set(key, stored);
    return structuredClone(stored);
  }

  async deleteWorkloadEndpoint(namespace: string, name: string, pre?: DeletePrecondition): Promise<boolean> {
    this.#enter('deleteWorkloadEndpoint');
    const key = `${namespace}/${name}`;
    const w = this.endpoints.get(key);
    if (!w) return false;
    if (
      (pre?.uid !== undefined && pre.uid !== w.metadata.uid) ||
      (pre?.resourceVersion !== undefined && pre.resourceVersion !== w.metadata.resourceVersion)
    ) {
      throw new CniPluginError(
        'try-again',
        `WorkloadEndpoint ${namespace}/${name} changed while deleting it`,
      );
    }
    this.endpoints.delete(key);
    return true;
  }

  async ensureNetworkProfile(network: string): Promise<void> {
    this.#enter('ensureNetworkProfile');
    this.profiles.add(network);
  }

  async autoAssign(req: AutoAssignRequest): Promise<string[]> {
    this.#enter('autoAssign');
    this.autoAssigns.push(structuredClone(req));
    const out: string[] = [];
    for (const [family, count, wanted] of [
      [4, req.num4, req.ipv4Pools],
      [6, req.num6, req.ipv6Pools],
    ] as const) {
      for (let i = 0; i < count; i++) {
        const cidr = this.#nextFree(family, wanted, req.namespaceLabels ?? {});
        if (!cidr) {
          for (const c of out) this.allocations.delete(c.split('/')[0]!);
          throw new CniPluginError('ipam-failed', `no free IPv${family} address in the pools`);
        }
        this.allocations.set(cidr.split('/')[0]!, {
          address: cidr.split('/')[0]!,
          cidr,
          handleId: req.handleId,
          attrs: { ...req.attrs },
        });
        out.push(cidr);
      }
    }
    return out;
  }

  async assignIp(req: AssignIpRequest): Promise<string> {
    this.#enter('assignIp');
    if (this.allocations.has(req.ip))
      throw new CniPluginError('ipam-failed', `address ${req.ip} is already in use`);
    const pool = this.pools.find((p) => !p.disabled && inCidr(req.ip, p.cidr));
    if (!pool) throw new CniPluginError('ipam-failed', `address ${req.ip} is not in any enabled pool`);
    const cidr = `${req.ip}/${pool.blockSize ?? (isIPv4(req.ip) ? 26 : 122)}`;
    this.allocations.set(req.ip, { address: req.ip, cidr, handleId: req.handleId, attrs: { ...req.attrs } });
    return cidr;
  }

  async releaseAddresses(ips: string[], handleId: string): Promise<string[]> {
    this.#enter('releaseAddresses');
    const out: string[] = [];
    for (const ip of ips) {
      if (this.allocations.get(ip)?.handleId !== handleId) continue;
      this.allocations.delete(ip);
      out.push(ip);
    }
    return out;
  }

  async releaseByHandle(handleId: string): Promise<boolean> {
    this.#enter('releaseByHandle');
    let found = false;
    for (const [ip, a] of this.allocations) {
      if (a.handleId === handleId) {
        this.allocations.delete(ip);
        found = true;
      }
    }
    return found;
  }

  async addressesOfHandle(handleId: string): Promise<string[]> {
    this.#enter('addressesOfHandle');
    return [...this.allocations.values()].filter((a) => a.handleId === handleId).map((a) => a.address);
  }

  async listHandles(): Promise<string[]> {
    this.#enter('listHandles');
    return [...new Set([...this.allocations.values()].map((a) => a.handleId))];
  }

  async poolCapacity(): Promise<PoolCapacity> {
    this.#enter('poolCapacity');
    let free = 0n;
    let enabled = 0;
    for (const p of this.pools) {
      if (p.disabled) continue;
      enabled++;
      const used = [...this.allocations.keys()].filter((ip) => inCidr(ip, p.cidr)).length;
      free += sizeOf(p.cidr) - BigInt(used);
    }
    return { enabledPools: enabled, free };
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  #nextFree(family: 4 | 6, wanted: string[], nsLabels: Record<string, string>): string | undefined {
    const pools = this.pools.filter(
      (p) =>
        !p.disabled &&
        isIPv4(p.cidr.split('/')[0]!) === (family === 4) &&
        (wanted.length === 0
          ? p.namespaceSelector === undefined || selectorMatches(p.namespaceSelector, nsLabels)
          : wanted.includes(p.cidr) || wanted.includes(p.name)),
    );
    for (const p of pools) {
      const [base, len] = p.cidr.split('/') as [string, string];
      const bits = family === 4 ? 32 : 128;
      const size = 1n << BigInt(bits - Number(len));
      const start = toBig(base);
      for (let i = 0n; i < size && i < 65536n; i++) {
        const ip = fromBig(start + i, family);
        if (!this.allocations.has(ip)) return `${ip}/${p.blockSize ?? (family === 4 ? 26 : 122)}`;
      }
    }
    return undefined;
  }
}

function toBig(ip: string): bigint {
  if (isIPv4(ip)) return ip.split('.').reduce((acc, o) => (acc << 8n) | BigInt(Number(o)), 0n);
  const [head, tail = ''] = ip.split('::') as [string, string?];
  const h = head === '' ? [] : head.split(':');
  const t = tail === '' ? [] : tail.split(':');
  const groups = [...h, ...new Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(Number.parseInt(g, 16)), 0n);
}

function fromBig(v: bigint, family: 4 | 6): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => String((v >> s) & 255n)).join('.');
  const groups: string[] = [];
  for (let s = 112n; s >= 0n; s -= 16n) groups.push(((v >> s) & 0xffffn).toString(16));
  return groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::');
}

function inCidr(ip: string, cidr: string): boolean {
  const [base, len] = cidr.split('/') as [string, string];
  if (isIPv4(ip) !== isIPv4(base)) return false;
  const bits = isIPv4(ip) ? 32n : 128n;
  const shift = bits - BigInt(Number(len));
  return toBig(ip) >> shift === toBig(base) >> shift;
}

function sizeOf(cidr: string): bigint {
  const [base, len] = cidr.split('/') as [string, string];
  return 1n << ((isIPv4(base) ? 32n : 128n) - BigInt(Number(len)));
}
