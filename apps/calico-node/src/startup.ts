/**
 * calico-node's start-up sequence (upstream `calico-node -startup`), run once before Felix and BIRD:
 *
 *   Node <name> ──get──► decideIP (IP, IP6 / autodetection) ──► conflict check ──► create|update Node
 *   IPPools ──list──► default pool per family without one (CALICO_IPV4POOL_*, CALICO_IPV6POOL_*) ──► create
 *   ClusterInformation default (GUID, type, version, datastoreReady), tiers default / kube-admin /
 *   kube-baseline, FelixConfiguration default and node.<name>, BGPConfiguration default
 *   <CALICO_VAR_LIB_DIR>/nodename ◄── the node name (what the CNI plugin reads)
 *
 * The decisions are the pure functions of node-resource.ts; this file only reads and writes. Writes
 * that race with other nodes (the pool, ClusterInformation, tiers) accept "already exists" and retry
 * on a conflict, as upstream does.
 */

import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ClusterInformation, FelixConfiguration, Kind, Node, ResourceOf } from '@calico-ts/api';
import type { Logger } from '@calico-ts/api/log';
import { type Datastore, isDatastoreError } from '@calico-ts/datastore';
import { autodetectIP, type HostInterface } from './autodetect.js';
import type { NodeEnv } from './env.js';
import { errorMessage, NodeError } from './errors.js';
import {
  conflictingNode,
  DEFAULT_TIERS,
  decideIP,
  defaultIPv4Pool,
  defaultIPv6Pool,
  desiredClusterInformation,
  desiredGlobalFelixConfig,
  desiredNode,
  desiredNodeFelixConfig,
  newClusterGUID,
} from './node-resource.js';
import { reconcileTunnelAddresses, type TunnelIpam } from './tunnel-address.js';

export interface StartupDeps {
  readonly datastore: Datastore;
  /** This host's interfaces with their IPv4 and IPv6 addresses. */
  readonly interfaces: () => Promise<HostInterface[]>;
  /** The source address the kernel picks to reach `destination`; undefined when unreachable. */
  readonly reachSource: (destination: string) => Promise<string | undefined>;
  /** The default IPv6 pool's CIDR when CALICO_IPV6POOL_CIDR is unset (default: a random ULA /48). */
  readonly ula?: () => string;
  readonly log: Logger;
  readonly guid?: () => string;
  /** IPAM, for this node's VXLAN tunnel address; absent: no tunnel address is managed. */
  readonly ipam?: TunnelIpam;
}

export interface StartupResult {
  readonly node: Node;
  readonly nodenameFile: string;
}

async function getOrUndefined<K extends Kind>(
  ds: Datastore,
  kind: K,
  name: string,
): Promise<ResourceOf<K> | undefined> {
  try {
    return await ds.get(kind, name);
  } catch (e) {
    if (isDatastoreError(e, 'not-found')) return undefined;
    throw new NodeError('datastore', `cannot read ${kind} ${name}: ${errorMessage(e)}`, { cause: e });
  }
}

async function createIgnoringExists(ds: Datastore, r: Parameters<Datastore['create']>[0]): Promise<boolean> {
  try {
    await ds.create(r);
    return true;
  } catch (e) {
    if (isDatastoreError(e, 'already-exists')) return false;
    throw new NodeError('datastore', `cannot create ${r.kind} ${r.metadata.name}: ${errorMessage(e)}`, {
      cause: e,
    });
  }
}

/** Write `text` to `path` atomically (temp file + rename), creating the directory. */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  await mkdir(join(path, '..'), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, text);
  await rename(tmp, path);
}

export async function registerNode(env: NodeEnv, deps: StartupDeps): Promise<Node> {
  const ds = deps.datastore;
  for (let attempt = 0; ; attempt++) {
    const existing = await getOrUndefined(ds, 'Node', env.nodeName);
    let ipv4Address: string | undefined;
    let ipv6Address: string | undefined;
    if (env.networkingBackend !== 'none') {
      const ifaces = await deps.interfaces();
      const decide = async (family: 4 | 6): Promise<string | undefined> => {
        const [setting, method, current] =
          family === 4
            ? [env.ip, env.autodetectionMethod, existing?.spec.bgp?.ipv4Address]
            : [env.ip6, env.ip6AutodetectionMethod, existing?.spec.bgp?.ipv6Address];
        const reach = method.kind === 'can-reach' ? await deps.reachSource(method.destination) : undefined;
        const decision = decideIP(
          family,
          setting,
          current,
          () => autodetectIP(family, method, ifaces, reach),
          ifaces,
        );
        for (const n of decision.notes) deps.log.info(n);
        return decision.address;
      };
      ipv4Address = await decide(4);
      ipv6Address = await decide(6);
      if (ipv4Address === undefined && ipv6Address === undefined) {
        throw new NodeError(
          'autodetect',
          'no IPv4 or IPv6 address configured or detected, required for Calico networking; set IP or IP6, ' +
            'or use CALICO_NETWORKING_BACKEND=none',
        );
      }
      const changedAddresses = [
        ipv4Address !== existing?.spec.bgp?.ipv4Address ? ipv4Address : undefined,
        ipv6Address !== existing?.spec.bgp?.ipv6Address ? ipv6Address : undefined,
      ].filter((a): a is string => a !== undefined);
      if (changedAddresses.length > 0 && !env.disableNodeIPCheck) {
        const nodes = await ds.list('Node');
        for (const address of changedAddresses) {
          const other = conflictingNode(env.nodeName, address, nodes.items);
          if (other !== undefined) {
            const v = address.includes(':') ? 'IPv6' : 'IPv4';
            throw new NodeError(
              'conflict',
              `Calico node '${other}' is already using the ${v} address ${address.split('/')[0]}`,
            );
          }
        }
      }
    }
    const { node, changed } = desiredNode(env, existing, ipv4Address, ipv6Address);
    if (!changed) return existing!;
    try {
      const written = existing === undefined ? await ds.create(node) : await ds.update(node);
      deps.log.info(
        {
          node: env.nodeName,
          ipv4Address: written.spec.bgp?.ipv4Address,
          ipv6Address: written.spec.bgp?.ipv6Address,
        },
        existing === undefined ? 'created Node' : 'updated Node',
      );
      return written;
    } catch (e) {
      const retry = isDatastoreError(e, 'conflict') || isDatastoreError(e, 'already-exists');
      if (retry && attempt < 5) continue;
      throw new NodeError('datastore', `cannot write Node ${env.nodeName}: ${errorMessage(e)}`, { cause: e });
    }
  }
}

export async function ensurePools(
  env: NodeEnv,
  ds: Datastore,
  log: StartupDeps['log'],
  ula?: () => string,
): Promise<void> {
  if (!env.pool.enabled && !env.pool6.enabled) {
    log.info('skipping IP pool configuration');
    return;
  }
  const pools = await ds.list('IPPool');
  for (const [v, pool] of [
    ['IPv4', defaultIPv4Pool(env.pool, pools.items)],
    ['IPv6', defaultIPv6Pool(env.pool6, pools.items, ula)],
  ] as const) {
    if (pool === undefined) continue;
    if (await createIgnoringExists(ds, pool)) {
      log.info(
        {
          cidr: pool.spec.cidr,
          ipipMode: pool.spec.ipipMode,
          vxlanMode: pool.spec.vxlanMode,
          natOutgoing: pool.spec.natOutgoing,
        },
        `created default ${v} pool`,
      );
    }
  }
}

export async function ensureClusterInformation(
  env: NodeEnv,
  ds: Datastore,
  guid: () => string,
): Promise<ClusterInformation> {
  for (let attempt = 0; ; attempt++) {
    const existing = await getOrUndefined(ds, 'ClusterInformation', 'default');
    const { info, changed } = desiredClusterInformation(existing, env.clusterType, guid);
    if (!changed) return existing!;
    try {
      return existing === undefined ? await ds.create(info) : await ds.update(info);
    } catch (e) {
      const retry = isDatastoreError(e, 'conflict') || isDatastoreError(e, 'already-exists');
      if (retry && attempt < 10) continue;
      throw new NodeError('datastore', `cannot write ClusterInformation default: ${errorMessage(e)}`, {
        cause: e,
      });
    }
  }
}

async function writeIfNeeded(
  ds: Datastore,
  existing: FelixConfiguration | undefined,
  desired: FelixConfiguration | undefined,
): Promise<void> {
  if (desired === undefined) return;
  try {
    if (existing === undefined) await ds.create(desired);
    else await ds.update(desired);
  } catch (e) {
    // Another node wrote it first: what it wrote stands, as upstream ignores these races.
    if (isDatastoreError(e, 'already-exists') || isDatastoreError(e, 'conflict')) return;
    throw new NodeError(
      'datastore',
      `cannot write FelixConfiguration ${desired.metadata.name}: ${errorMessage(e)}`,
      {
        cause: e,
      },
    );
  }
}

export async function ensureDefaultConfig(env: NodeEnv, ds: Datastore, guid: () => string): Promise<void> {
  await ensureClusterInformation(env, ds, guid);
  for (const tier of DEFAULT_TIERS) await createIgnoringExists(ds, tier);
  const global = await getOrUndefined(ds, 'FelixConfiguration', 'default');
  await writeIfNeeded(ds, global, desiredGlobalFelixConfig(global));
  if (ds.backend !== 'kubernetes') {
    const perNode = await getOrUndefined(ds, 'FelixConfiguration', `node.${env.nodeName}`);
    await writeIfNeeded(ds, perNode, desiredNodeFelixConfig(env.nodeName, perNode));
  }
  if ((await getOrUndefined(ds, 'BGPConfiguration', 'default')) === undefined) {
    await createIgnoringExists(ds, {
      apiVersion: 'projectcalico.org/v3',
      kind: 'BGPConfiguration',
      metadata: { name: 'default' },
      spec: {},
    });
  }
}

/** The whole start-up sequence. Throws `NodeError` with a message for the operator. */
export async function runStartup(env: NodeEnv, deps: StartupDeps): Promise<StartupResult> {
  const guid = deps.guid ?? newClusterGUID;
  deps.log.info({ node: env.nodeName, backend: env.networkingBackend }, 'starting node');
  const node = await registerNode(env, deps);
  await ensurePools(env, deps.datastore, deps.log, deps.ula);
  await ensureDefaultConfig(env, deps.datastore, guid);
  if (deps.ipam && env.networkingBackend !== 'none') {
    await reconcileTunnelAddresses(deps.datastore, deps.ipam, env.nodeName, deps.log);
  }
  const nodenameFile = join(env.varLibDir, 'nodename');
  await writeFileAtomic(nodenameFile, env.nodeName);
  deps.log.info({ node: env.nodeName, nodenameFile }, 'using node name');
  return { node, nodenameFile };
}
