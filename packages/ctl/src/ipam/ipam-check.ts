/**
 * `ipam check`: cross-reference the IPAM allocations with what uses addresses, and with the IPAM
 * records themselves (pure: one snapshot in, printed lines and the report out).
 *
 * As upstream (`calicoctl/commands/ipam/check.go`): an allocation is in use when a
 * WorkloadEndpoint's ipNetworks or a Node's tunnel address holds it (or it is one of Windows'
 * reserved addresses); one that is not is reported as leaked. Also reported: addresses in use with
 * no allocation (inside an active pool, or outside every one), handles that no allocation refers to,
 * and handles that allocations refer to but that do not exist. Beside upstream's scans, the record
 * checks of `IpamClient.check()` are reported: handle counts that disagree with the blocks, and
 * block affinities whose node or block is missing. Kubernetes Services are not consulted (no
 * Kubernetes datastore here), so load-balancer addresses count as leaked.
 *
 * The report file keeps upstream's JSON shape, so `ipam release --from-report` reads either.
 */
import { cidrContains, formatIP, parseCidrOrIP, parseIP } from '@calico-ts/api/net';
import type { AllocationBlock } from '@calico-ts/datastore';
import type { CheckReport } from '@calico-ts/ipam';
import { allocationsOf, hostOfAffinity, WINDOWS_RESERVED_HANDLE } from '@calico-ts/ipam/internal';
import { CtlError } from '../errors.js';

/** One allocation as the report records it (upstream's `Allocation`, same JSON names and order). */
export interface ReportAllocation {
  ip: string;
  handle?: string;
  sequenceNumber?: bigint;
  pod?: string;
  namespace?: string;
  node?: string;
  type?: string;
  creationTimestamp?: string;
  inUse: boolean;
  borrowed?: boolean;
  owners: string[] | null;
}

export interface ReportHandle {
  ID: string;
  UID: string | null;
  Revision: string;
}

export interface IpamReport {
  version: string;
  clusterGUID: string;
  datastoreLocked: boolean;
  clusterInformationRevision: string;
  clusterType: string;
  allocations: Record<string, ReportAllocation[]>;
  leakedHandles?: ReportHandle[];
}

type Obj = Record<string, unknown>;

export interface CheckInput {
  version: string;
  clusterInfo?: { guid: string; revision: string; locked: boolean; clusterType: string };
  blocks: readonly AllocationBlock[];
  pools: readonly { cidr: string; disabled?: boolean }[];
  /** Node resources (their spec's tunnel addresses are read). */
  nodes: readonly { metadata: { name: string }; spec?: unknown }[];
  /** WorkloadEndpoint resources (namespace, name, spec.ipNetworks). */
  workloadEndpoints: readonly { metadata: { name: string; namespace?: string }; spec?: unknown }[];
  /** Handle ID → revision of its record. */
  handles: ReadonlyMap<string, string>;
  /** `IpamClient.check()` over the same records. */
  records: CheckReport;
  showAllIPs: boolean;
  showProblemIPs: boolean;
}

/** A line of output: progress (stderr) or a finding (stdout). */
export interface CheckLine {
  stream: 'progress' | 'result';
  text: string;
}

export interface CheckResult {
  lines: CheckLine[];
  problems: number;
  report: IpamReport;
}

interface Owner {
  name: string;
}

function normaliseIP(text: string, what: string): string {
  const c = parseCidrOrIP(text);
  if (!c) throw new CtlError('failed', `failed to parse IP (${text}) of ${what}`);
  return formatIP({ family: c.family, value: c.address });
}

function nodeIPs(n: CheckInput['nodes'][number]): string[] {
  const spec = (n.spec ?? {}) as Obj;
  const bgp = (spec.bgp ?? {}) as Obj;
  const wg = (spec.wireguard ?? {}) as Obj;
  const out: string[] = [];
  for (const [field, v] of [
    ['ipv4VXLANTunnelAddr', spec.ipv4VXLANTunnelAddr],
    ['ipv6VXLANTunnelAddr', spec.ipv6VXLANTunnelAddr],
    ['wireguard.interfaceIPv4Address', wg.interfaceIPv4Address],
    ['wireguard.interfaceIPv6Address', wg.interfaceIPv6Address],
    ['bgp.ipv4IPIPTunnelAddr', bgp.ipv4IPIPTunnelAddr],
  ] as const) {
    if (typeof v === 'string' && v !== '') out.push(normaliseIP(v, `${field} of node ${n.metadata.name}`));
  }
  return out;
}

function attrString(handle: string | null, attrs: Record<string, string>): string {
  const kvs = Object.keys(attrs)
    .sort()
    .map((k) => `${k}=${attrs[k]}`);
  return `Main:${handle ?? '<none>'} Extra:${kvs.join(',')}`;
}

export function runCheck(input: CheckInput): CheckResult {
  const lines: CheckLine[] = [];
  const progress = (text: string) => lines.push({ stream: 'progress', text });
  const result = (text: string) => lines.push({ stream: 'result', text });
  const { showAllIPs } = input;
  const showProblemIPs = input.showAllIPs || input.showProblemIPs;

  const allocations = new Map<string, (ReportAllocation & { attrText: string })[]>();
  const byNode = new Map<string, number>();
  const inUseIPs = new Map<string, Owner[]>();
  const inUseHandles = new Set<string>();

  const recordInUse = (ip: string, name: string) => {
    if (showAllIPs) result(`  ${ip} belongs to ${name}`);
    const owners = inUseIPs.get(ip) ?? [];
    owners.push({ name });
    inUseIPs.set(ip, owners);
    for (const a of allocations.get(ip) ?? []) {
      a.inUse = true;
      a.owners = [...(a.owners ?? []), name];
    }
  };

  progress('Checking IPAM for inconsistencies...');
  progress('');

  progress('Loading all IPAM blocks...');
  progress(`Found ${input.blocks.length} IPAM blocks.`);
  let numAllocs = 0;
  for (const b of input.blocks) {
    progress(` IPAM block ${b.cidr} affinity=${b.affinity ?? '<none>'}:`);
    const blockHost = hostOfAffinity(b.affinity) ?? '';
    for (const a of allocationsOf(b)) {
      numAllocs++;
      const ip = formatIP(a.ip);
      const alloc: ReportAllocation & { attrText: string } = {
        ip,
        inUse: false,
        owners: null,
        attrText: attrString(a.handleId, a.attrs),
      };
      let windows = false;
      if (a.handleId !== null) {
        if (a.handleId.toLowerCase() === WINDOWS_RESERVED_HANDLE) windows = true;
        else {
          alloc.handle = a.handleId;
          inUseHandles.add(a.handleId);
        }
      }
      alloc.sequenceNumber = a.sequenceNumber;
      if (a.attrs.pod) alloc.pod = a.attrs.pod;
      if (a.attrs.namespace) alloc.namespace = a.attrs.namespace;
      const node = a.attrs.node || blockHost;
      if (node) alloc.node = node;
      if (a.attrs.type) alloc.type = a.attrs.type;
      if (a.attrs.timestamp) alloc.creationTimestamp = a.attrs.timestamp;
      if (node !== blockHost) alloc.borrowed = true;
      const list = allocations.get(ip) ?? [];
      list.push(alloc);
      allocations.set(ip, list);
      byNode.set(node, (byNode.get(node) ?? 0) + 1);
      if (showAllIPs) result(`  ${ip} allocated; attrs ${alloc.attrText}`);
      if (windows) recordInUse(ip, 'Reserved for Windows');
    }
  }
  progress(`IPAM blocks record ${numAllocs} allocations.`);
  progress('');

  progress('Loading all IPAM pools...');
  const activePools = [];
  for (const p of input.pools) {
    if (p.disabled) continue;
    progress(`  ${p.cidr}`);
    const c = parseCidrOrIP(p.cidr);
    if (!c) throw new CtlError('failed', `failed to parse IP pool CIDR: ${p.cidr}`);
    activePools.push(c);
  }
  progress(`Found ${activePools.length} active IP pools.`);
  progress('');

  progress('Loading all nodes.');
  let numNodeIPs = 0;
  for (const n of input.nodes) {
    for (const ip of nodeIPs(n)) {
      recordInUse(ip, `Node(${n.metadata.name})`);
      numNodeIPs++;
    }
  }
  progress(`Found ${numNodeIPs} node tunnel IPs.`);
  progress('');

  progress('Loading all workload endpoints.');
  let numWepIPs = 0;
  for (const w of input.workloadEndpoints) {
    const ns = w.metadata.namespace ?? '';
    const nets = ((w.spec ?? {}) as Obj).ipNetworks;
    for (const net of Array.isArray(nets) ? nets : []) {
      const ip = normaliseIP(String(net), `workload ${ns}/${w.metadata.name}`);
      recordInUse(ip, `Workload(${ns}/${w.metadata.name})`);
      numWepIPs++;
    }
  }
  progress(`Found ${numWepIPs} workload IPs.`);
  progress(`Workloads and nodes are using ${inUseIPs.size} IPs.`);
  progress('');

  progress('Loading all handles');
  const NODES_TO_PRINT = 20;
  progress(`Looking for top (up to ${NODES_TO_PRINT}) nodes by allocations...`);
  const nodes = [...byNode.keys()].sort((a, b) => byNode.get(b)! - byNode.get(a)!);
  for (const n of nodes.slice(0, NODES_TO_PRINT)) result(`  ${n} has ${byNode.get(n)} allocations`);
  if (nodes.length > 0) {
    const max = byNode.get(nodes[0]!)!;
    const median = byNode.get(nodes[nodes.length >> 1]!)!;
    result(`Node with most allocations has ${max}; median is ${median}`);
  }
  result('');

  let problems = 0;
  progress('Scanning for IPs that are allocated but not actually in use...');
  let leaked = 0;
  for (const [ip, allocs] of allocations) {
    if (inUseIPs.has(ip)) continue;
    if (showProblemIPs) for (const a of allocs) result(`  ${ip} leaked; attrs ${a.attrText}`);
    leaked++;
  }
  problems += leaked;
  result(`Found ${leaked} IPs that are allocated in IPAM but not actually in use.`);

  progress('Scanning for IPs that are in use by a workload or node but not allocated in IPAM...');
  let notAllocated = 0;
  let nonCalico = 0;
  for (const [ip, owners] of inUseIPs) {
    if (showProblemIPs && owners.length > 1) result(`  ${ip} has multiple owners.`);
    if (allocations.has(ip)) continue;
    const addr = parseIP(ip)!;
    const inPool = activePools.some((c) => cidrContains(c, addr));
    if (!inPool) {
      if (showProblemIPs)
        for (const o of owners) result(`  ${ip} in use by ${o.name} is not in any active IP pool.`);
      nonCalico++;
      continue;
    }
    if (showProblemIPs) {
      for (const o of owners)
        result(`  ${ip} in use by ${o.name} and in active IPAM pool but has no IPAM allocation.`);
    }
    notAllocated++;
  }
  problems += nonCalico + notAllocated;
  result(`Found ${nonCalico} in-use IPs that are not in active IP pools.`);
  result(
    `Found ${notAllocated} in-use IPs that are in active IP pools but have no corresponding IPAM allocation.`,
  );
  result('');

  progress('Scanning for IPAM handles with no matching IPs...');
  const leakedHandles: ReportHandle[] = [];
  let goodHandles = 0;
  for (const [id, revision] of input.handles) {
    if (inUseHandles.has(id)) {
      goodHandles++;
      continue;
    }
    if (showAllIPs) result(`  ${id} doesn't have any active IPs.`);
    leakedHandles.push({ ID: id, UID: null, Revision: revision });
  }
  problems += leakedHandles.length;
  result(
    `Found ${leakedHandles.length} handles with no matching IPs (and ${goodHandles} handles with matches).`,
  );

  progress('Scanning for IPs with missing handle...');
  let missingHandles = 0;
  for (const id of inUseHandles) {
    if (input.handles.has(id)) continue;
    if (showProblemIPs) result(`  ${id} is in use in a block but doesn't exist.`);
    missingHandles++;
  }
  problems += missingHandles;
  result(`Found ${missingHandles} handles mentioned in blocks with no matching handle resource.`);

  progress('Scanning for handle counts that disagree with the blocks...');
  const mismatches = input.records.handleCountMismatches;
  if (showProblemIPs) {
    for (const m of mismatches)
      result(`  ${m.handleId} counts ${m.recorded} in block ${m.block}, which holds ${m.actual}.`);
  }
  problems += mismatches.length;
  result(`Found ${mismatches.length} handle counts that disagree with the blocks.`);

  progress('Scanning for block affinities of missing nodes or blocks...');
  const dangling = input.records.danglingAffinities;
  const danglingWhy = {
    'node-missing': 'its node does not exist',
    'block-missing': 'its block does not exist',
    'block-affine-elsewhere': 'its block belongs to another host',
  } as const;
  if (showProblemIPs) {
    for (const d of dangling) result(`  affinity of ${d.host} for ${d.cidr}: ${danglingWhy[d.reason]}.`);
  }
  problems += dangling.length;
  result(`Found ${dangling.length} block affinities whose node or block is missing.`);

  result(`Check complete; found ${problems} problems.`);

  const reportAllocs: Record<string, ReportAllocation[]> = {};
  for (const ip of [...allocations.keys()].sort()) {
    reportAllocs[ip] = allocations.get(ip)!.map((a) => ({
      ip: a.ip,
      ...(a.handle !== undefined ? { handle: a.handle } : {}),
      ...(a.sequenceNumber !== undefined ? { sequenceNumber: a.sequenceNumber } : {}),
      ...(a.pod !== undefined ? { pod: a.pod } : {}),
      ...(a.namespace !== undefined ? { namespace: a.namespace } : {}),
      ...(a.node !== undefined ? { node: a.node } : {}),
      ...(a.type !== undefined ? { type: a.type } : {}),
      ...(a.creationTimestamp !== undefined ? { creationTimestamp: a.creationTimestamp } : {}),
      inUse: a.inUse,
      ...(a.borrowed ? { borrowed: true } : {}),
      owners: a.owners,
    }));
  }
  const ci = input.clusterInfo;
  const report: IpamReport = {
    version: input.version,
    clusterGUID: ci?.guid ?? '',
    datastoreLocked: ci?.locked ?? false,
    clusterInformationRevision: ci?.revision ?? '',
    clusterType: ci?.clusterType ?? '',
    allocations: reportAllocs,
    ...(leakedHandles.length > 0 ? { leakedHandles } : {}),
  };
  return { lines, problems, report };
}

/** The report as upstream writes it: Go's indented JSON, 64-bit sequence numbers exact. */
export function formatReport(report: IpamReport): string {
  const text = JSON.stringify(report, (_k, v: unknown) => (typeof v === 'bigint' ? `\u0000big:${v}` : v), 2);
  return text
    .replace(/"\\u0000big:(\d+)"/g, '$1')
    .replace(/[<>&]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
