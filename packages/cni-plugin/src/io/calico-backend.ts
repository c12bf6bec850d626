/**
 * `PluginBackend` on the real datastore, etcdv3 or Kubernetes: `@calico-ts/datastore` for Calico
 * resources and `@calico-ts/ipam` for addresses, configured from the network config exactly as
 * upstream does (the config's datastore fields, `datastore_type`, `etcd_*`, `kubernetes.kubeconfig`
 * and `kubernetes.k8s_api_root`, exported over the plugin's environment, then the env loader). On
 * the Kubernetes datastore a WorkloadEndpoint write annotates the Pod, which must exist.
 *
 * Imported lazily by the executable: only commands that touch the datastore pay for etcd3/gRPC.
 *
 * Errors: datastore and IPAM errors are classified here, once: unreachable/timeouts ⇒ `try-again`,
 * a bad client configuration ⇒ `invalid-config`, exhausted pools ⇒ `ipam-failed`, anything else ⇒
 * `datastore-failed`.
 */
import type { ResourceObject } from '@calico-ts/api';
import type { Logger } from '@calico-ts/api/log';
import { cidrContains, cidrSize, formatIP, parseCidr } from '@calico-ts/api/net';
import {
  type ClientConfig,
  createKVStore,
  type Datastore,
  isDatastoreError,
  type KV,
  KVDatastore,
  type KVStore,
  loadCniClientConfig,
} from '@calico-ts/datastore';
import { decodeResource, handleKey, resourceKey } from '@calico-ts/datastore/internal';
import { IpamClient, IpamStore, isIpamError } from '@calico-ts/ipam';
import { CniPluginError, isCniPluginError, messageOf } from '../errors.js';
import type { Env } from '../spec/env.js';
import type { NetConf } from '../spec/netconf.js';
import type {
  AssignIpRequest,
  AutoAssignRequest,
  DeletePrecondition,
  PluginBackend,
  PodEndpoint,
  PoolCapacity,
  Readiness,
  WorkloadEndpoint,
  WriteEndpointOptions,
} from './backend.js';

export async function openCalicoBackend(conf: NetConf, env: Env, log: Logger): Promise<PluginBackend> {
  return openCalicoBackendWith(await loadBackendConfig(conf, env, log), interfacePrefixOf(env));
}

/**
 * The interface prefix list the plugin names host interfaces with (FELIX_INTERFACEPREFIX), for the
 * Kubernetes datastore to name the endpoints it reads back the same way.
 */
export function interfacePrefixOf(env: Env): { interfacePrefix?: string } {
  return env.FELIX_INTERFACEPREFIX ? { interfacePrefix: env.FELIX_INTERFACEPREFIX } : {};
}

/**
 * The datastore client configuration the network config and environment name (upstream's rules).
 * Two invocations with equal configurations talk to the same datastore the same way, which is what
 * lets the plugin service keep one open client per configuration.
 */
export async function loadBackendConfig(conf: NetConf, env: Env, log: Logger): Promise<ClientConfig> {
  let cfg: ClientConfig;
  try {
    cfg = await loadCniClientConfig(conf.raw, { env: { ...env }, onWarning: (w) => log.warn(w) });
  } catch (e) {
    throw classify(e, 'open the datastore');
  }
  return cfg;
}

/**
 * `mirrorHosts`: for a long-lived caller (the plugin service), keep each node's IPAM assignment
 * environment in memory from the first ADD on (`IpamClient.mirrorHost`), so later ADDs on it need
 * no read before their write. A one-shot run leaves it off: the watches would outlive the run.
 * `interfacePrefix`: FELIX_INTERFACEPREFIX as the invocation has it (Kubernetes datastore: the
 * endpoints read back are named on the host with its first entry, as the plugin names the veth).
 */
export async function openCalicoBackendWith(
  cfg: ClientConfig,
  opts: { mirrorHosts?: boolean; interfacePrefix?: string } = {},
): Promise<PluginBackend> {
  let kv: KVStore;
  try {
    // Exec'd per pod: etcd's gRPC over node:http2 loads far faster than etcd3 and grpc-js. The
    // Kubernetes datastore reads its kubeconfig itself (no @kubernetes/client-node unless the
    // kubeconfig's user needs an exec or auth-provider plugin).
    kv = await createKVStore(cfg, {
      transport: 'http2',
      ...(opts.interfacePrefix !== undefined ? { interfacePrefix: opts.interfacePrefix } : {}),
    });
  } catch (e) {
    throw classify(e, 'open the datastore');
  }
  const ds = new KVDatastore(kv, { backend: cfg.datastoreType });
  const store = new IpamStore(kv);
  return new CalicoBackend(ds, new IpamClient(ds, store), store, opts.mirrorHosts === true, kv);
}

export class CalicoBackend implements PluginBackend {
  readonly #ds: Datastore;
  readonly #ipam: IpamClient;
  readonly #records: IpamStore;
  readonly #mirrorHosts: boolean;
  /** The store under `ds`, for the IPAM handle a WorkloadEndpoint create is guarded by (etcd). */
  readonly #kv: KVStore | undefined;
  #readiness: ReadinessMirror | undefined;

  /**
   * `kv`: the store `ds` and `records` use; given, WorkloadEndpoint creates with an `ipamHandle`
   * are made in one transaction with that handle on the etcd datastore.
   */
  constructor(ds: Datastore, ipam: IpamClient, records: IpamStore, mirrorHosts = false, kv?: KVStore) {
    this.#ds = ds;
    this.#ipam = ipam;
    this.#records = records;
    this.#mirrorHosts = mirrorHosts;
    this.#kv = kv;
  }

  get endpointsOnPods(): boolean {
    return this.#ds.backend === 'kubernetes';
  }

  async readiness(): Promise<Readiness> {
    if (this.#mirrorHosts) {
      // The plugin service: ClusterInformation as a watch keeps it, read only while that is down.
      this.#readiness ??= new ReadinessMirror(this.#ds, () => {
        this.#readiness = undefined;
      });
      const held = this.#readiness.current();
      if (held) return held;
    }
    return op('read ClusterInformation', async () => {
      try {
        return readinessOf(await this.#ds.get('ClusterInformation', 'default'));
      } catch (e) {
        if (isDatastoreError(e, 'not-found')) return readinessOf(undefined);
        throw e;
      }
    });
  }

  async getWorkloadEndpoint(namespace: string, name: string): Promise<WorkloadEndpoint | undefined> {
    return op(`read WorkloadEndpoint ${namespace}/${name}`, async () => {
      try {
        return (await this.#ds.get('WorkloadEndpoint', name, { namespace })) as WorkloadEndpoint;
      } catch (e) {
        if (isDatastoreError(e, 'not-found')) return undefined;
        throw e;
      }
    });
  }

  endpointOfPod(namespace: string, name: string, pod: unknown): PodEndpoint | undefined {
    const kv = this.#kv as (KVStore & { adopt?(key: string, object: object): KV | undefined }) | undefined;
    if (this.#ds.backend !== 'kubernetes' || typeof kv?.adopt !== 'function') return undefined;
    const key = resourceKey('WorkloadEndpoint', name, namespace);
    let found: KV | undefined;
    try {
      found = kv.adopt(key, pod as object);
    } catch {
      return undefined; // not the Pod of this endpoint: read it
    }
    return {
      endpoint: found
        ? (decodeResource(found, { kind: 'WorkloadEndpoint', name, namespace }) as WorkloadEndpoint)
        : undefined,
    };
  }

  async writeWorkloadEndpoint(
    wep: WorkloadEndpoint,
    opts: WriteEndpointOptions = {},
  ): Promise<WorkloadEndpoint> {
    return op(`write WorkloadEndpoint ${wep.metadata.namespace}/${wep.metadata.name}`, async () => {
      const clean = structuredClone(wep);
      delete clean.metadata.resourceVersion;
      // Usually new: one create. A re-ADD of the same pod finds it there and updates it.
      try {
        return await this.#createEndpoint(clean, opts.ipamHandle);
      } catch (e) {
        // On the Kubernetes datastore the endpoint is the Pod itself (its cni.projectcalico.org
        // annotations): a Pod the API server does not have cannot get one.
        if (this.#ds.backend === 'kubernetes' && isDatastoreError(e, 'not-found') && wep.spec.pod) {
          throw new CniPluginError(
            'datastore-failed',
            `pod ${wep.metadata.namespace}/${wep.spec.pod} does not exist in the Kubernetes API server`,
            { cause: e, details: messageOf(e) },
          );
        }
        if (!isDatastoreError(e, 'already-exists')) throw e;
      }
      return (await this.#ds.apply(clean)) as WorkloadEndpoint;
    });
  }

  /**
   * The create of `writeWorkloadEndpoint`. On etcd with an IPAM handle, guarded by it: a create the
   * kernel delivers late, after a DEL released the handle (the writer was killed or gave up while
   * etcd was cut off), finds the handle gone and writes nothing. An update needs no guard: it is a
   * compare-and-swap on the endpoint, which that DEL deleted. On the Kubernetes datastore the
   * endpoint lives on the Pod, whose deletion ends it.
   */
  async #createEndpoint(wep: WorkloadEndpoint, ipamHandle: string | undefined): Promise<WorkloadEndpoint> {
    const kv = this.#kv;
    if (ipamHandle === undefined || kv === undefined || this.#ds.backend !== 'etcdv3') {
      return (await this.#ds.create(structuredClone(wep))) as WorkloadEndpoint;
    }
    const ds = this.#ds as KVDatastore;
    for (let attempt = 0; ; attempt++) {
      const handle = await kv.get(handleKey(ipamHandle));
      if (!handle) {
        throw new CniPluginError(
          'try-again',
          `IPAM handle ${ipamHandle} no longer exists (released by a DEL of this container?): not writing its WorkloadEndpoint`,
        );
      }
      try {
        return (await ds.createGuarded(structuredClone(wep), handle)) as WorkloadEndpoint;
      } catch (e) {
        // The handle moved on between the read and the write (another write of it): read again.
        if (isDatastoreError(e, 'conflict') && attempt < 4) continue;
        if (isDatastoreError(e, 'not-found')) {
          throw new CniPluginError('try-again', messageOf(e), { cause: e });
        }
        throw e;
      }
    }
  }

  async deleteWorkloadEndpoint(namespace: string, name: string, pre?: DeletePrecondition): Promise<boolean> {
    return op(`delete WorkloadEndpoint ${namespace}/${name}`, async () => {
      try {
        await this.#ds.delete('WorkloadEndpoint', name, {
          namespace,
          ...(pre?.resourceVersion !== undefined ? { resourceVersion: pre.resourceVersion } : {}),
        });
        return true;
      } catch (e) {
        if (isDatastoreError(e, 'not-found')) return false;
        if (isDatastoreError(e, 'conflict')) {
          throw new CniPluginError(
            'try-again',
            `WorkloadEndpoint ${namespace}/${name} changed while deleting it`,
          );
        }
        throw e;
      }
    });
  }

  async ensureNetworkProfile(network: string, orchestrator: 'k8s' | 'cni'): Promise<void> {
    await op(`create Profile ${network}`, async () => {
      try {
        await this.#ds.get('Profile', network);
        return;
      } catch (e) {
        if (!isDatastoreError(e, 'not-found')) throw e;
      }
      // Upstream's profile for a network without a policy plugin: all egress; ingress from anything
      // (Kubernetes) or from members of the same network.
      const profile: ResourceObject<'Profile', unknown> = {
        apiVersion: 'projectcalico.org/v3',
        kind: 'Profile',
        metadata: { name: network },
        spec: {
          egress: [{ action: 'Allow' }],
          ingress:
            orchestrator === 'k8s'
              ? [{ action: 'Allow' }]
              : [{ action: 'Allow', source: { selector: `has(${network})` } }],
          labelsToApply: { [network]: '' },
        },
      };
      try {
        await this.#ds.create(profile as Parameters<Datastore['create']>[0]);
      } catch (e) {
        if (!isDatastoreError(e, 'already-exists')) throw e;
      }
    });
  }

  prefetchAssign(node: string): void {
    this.#ipam.prefetchAssignEnv(node);
    // Started once per node; until its first read is in (or if it fails), ADDs read as before.
    if (this.#mirrorHosts) this.#ipam.mirrorHost(node).catch(() => undefined);
  }

  async autoAssign(req: AutoAssignRequest): Promise<string[]> {
    return op('assign addresses', async () => {
      const r = await this.#ipam.autoAssign({
        num4: req.num4,
        num6: req.num6,
        handleId: req.handleId,
        attrs: { ...req.attrs, node: req.node },
        hostname: req.node,
        ipv4Pools: req.ipv4Pools,
        ipv6Pools: req.ipv6Pools,
        ...(req.namespaceLabels ? { namespaceLabels: req.namespaceLabels } : {}),
      });
      return [...r.ipv4, ...r.ipv6].map((a) => a.cidr);
    });
  }

  async assignIp(req: AssignIpRequest): Promise<string> {
    return op(`assign ${req.ip}`, async () => {
      const a = await this.#ipam.assignIP(req.ip, {
        handleId: req.handleId,
        attrs: { ...req.attrs, node: req.node },
        hostname: req.node,
      });
      return a.cidr;
    });
  }

  async releaseAddresses(ips: string[], handleId: string): Promise<string[]> {
    return op(`release ${ips.join(', ')}`, async () => {
      const r = await this.#ipam.releaseIPs(ips.map((ip) => ({ ip, handleId })));
      return r.released;
    });
  }

  async releaseByHandle(handleId: string): Promise<boolean> {
    return op(`release handle ${handleId}`, async () => {
      return (await this.#ipam.releaseHandle(handleId)).existed;
    });
  }

  async addressesOfHandle(handleId: string): Promise<string[]> {
    return op(`read handle ${handleId}`, async () => {
      const handle = await this.#records.getHandle(handleId);
      if (!handle) return [];
      const out: string[] = [];
      for (const cidr of Object.keys(handle.value.block)) {
        const block = await this.#records.getBlock(cidr);
        if (!block) continue;
        out.push(...addressesOfHandleInBlock(block.value, handleId));
      }
      return out;
    });
  }

  async listHandles(): Promise<string[]> {
    return op('list IPAM handles', async () =>
      (await this.#records.listHandles()).items.map((h) => h.value.handleId),
    );
  }

  async poolCapacity(): Promise<PoolCapacity> {
    return op('read IP pools', async () => {
      const pools = (await this.#ds.list('IPPool')).items;
      const usable = pools.filter((p) => {
        const s = p.spec as { disabled?: boolean; allowedUses?: string[] };
        return !s.disabled && (s.allowedUses === undefined || s.allowedUses.includes('Workload'));
      });
      let free = 0n;
      const blocks = usable.length > 0 ? (await this.#records.listBlocks()).items : [];
      for (const p of usable) {
        const cidr = parseCidr((p.spec as { cidr: string }).cidr);
        if (!cidr) continue;
        free += cidrSize(cidr);
        for (const b of blocks) {
          if (cidrContains(cidr, b.value.cidr))
            free -= BigInt(b.value.allocations.filter((a: number | null) => a !== null).length);
        }
      }
      return { enabledPools: usable.length, free };
    });
  }

  async close(): Promise<void> {
    this.#readiness?.close();
    this.#ipam.close();
    await this.#ds.close();
  }
}

/** What ClusterInformation `default` (undefined: it does not exist) says of readiness. */
function readinessOf(ci: { spec: unknown } | undefined): Readiness {
  if (!ci) return { ready: false, reason: 'ClusterInformation "default" does not exist' };
  return (ci.spec as { datastoreReady?: boolean }).datastoreReady === true
    ? { ready: true }
    : { ready: false, reason: 'ClusterInformation "default" has datastoreReady false' };
}

/**
 * ClusterInformation `default` kept by a watch, for a long-lived process that would otherwise read
 * it before every ADD and DEL: listed once, then followed. `current()` answers only while the watch
 * is up (undefined before the list, while disconnected, after a record it could not decode, and once
 * it has ended, when `onEnd` lets the owner start another); the caller reads it then.
 */
class ReadinessMirror {
  readonly #abort = new AbortController();
  #held: Readiness | undefined;
  #up = false;

  constructor(ds: Datastore, onEnd: () => void) {
    void this.#run(ds).finally(() => {
      this.#up = false;
      if (!this.#abort.signal.aborted) onEnd();
    });
  }

  current(): Readiness | undefined {
    return this.#up ? this.#held : undefined;
  }

  close(): void {
    this.#up = false;
    this.#abort.abort();
  }

  #hold(items: readonly { metadata: { name?: string }; spec: unknown }[]): void {
    this.#held = readinessOf(items.find((ci) => ci.metadata.name === 'default'));
  }

  async #run(ds: Datastore): Promise<void> {
    try {
      const list = await ds.list('ClusterInformation');
      if (this.#abort.signal.aborted) return;
      this.#hold(list.items);
      this.#up = true;
      for await (const e of ds.watch('ClusterInformation', {
        revision: list.revision,
        signal: this.#abort.signal,
      })) {
        switch (e.kind) {
          case 'added':
          case 'modified':
            if (e.resource.metadata.name === 'default') this.#held = readinessOf(e.resource);
            break;
          case 'deleted':
            if (e.resource.metadata.name === 'default') this.#held = readinessOf(undefined);
            break;
          case 'resync':
            this.#hold(e.items);
            break;
          case 'error':
            return; // a record it cannot read: the reads that follow report it
          case 'disconnected':
            this.#up = false;
            break;
          case 'reconnected':
            this.#up = true;
            break;
        }
      }
    } catch {
      // The list or the watch failed: readiness is read again until another starts.
    }
  }
}

function addressesOfHandleInBlock(
  block: { cidr: string; allocations: (number | null)[]; attributes: { handle_id?: string | null }[] },
  handleId: string,
): string[] {
  const out: string[] = [];
  const base = parseCidr(block.cidr);
  if (!base) return out;
  block.allocations.forEach((attrIdx, ordinal) => {
    if (attrIdx === null) return;
    if (block.attributes[attrIdx]?.handle_id !== handleId) return;
    out.push(formatIP({ family: base.family, value: base.network + BigInt(ordinal) }));
  });
  return out;
}

async function op<T>(what: string, f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw classify(e, what);
  }
}

/** The one place datastore and IPAM errors become plugin errors. */
function classify(e: unknown, what: string): CniPluginError {
  if (isCniPluginError(e)) return e;
  const msg = `failed to ${what}: ${messageOf(e)}`;
  if (isDatastoreError(e)) {
    switch (e.code) {
      case 'unavailable':
      case 'conflict':
        return new CniPluginError('try-again', msg, { cause: e });
      case 'config':
      case 'unsupported':
        return new CniPluginError('invalid-config', msg, { cause: e });
      default:
        return new CniPluginError('datastore-failed', msg, { cause: e });
    }
  }
  if (isIpamError(e)) {
    if (e.code === 'datastore' && isDatastoreError(e.cause)) return classify(e.cause, what);
    if (e.code === 'conflict-retries-exhausted') return new CniPluginError('try-again', msg, { cause: e });
    return new CniPluginError('ipam-failed', msg, { cause: e });
  }
  return new CniPluginError('datastore-failed', msg, { cause: e });
}
