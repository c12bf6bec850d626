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
import { type Cidr, cidrContains, formatIP, parseCidrOrIP, parseIP } from '@calico-ts/api/net';
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

/** An allocation while the scan runs: the report's fields and the attributes as printed. */
type ScannedAllocation = ReportAllocation & { attrText: string };

/**
 * What the scan has seen so far, and the lines it has printed. Each stage below reads the input,
 * adds to these maps and prints its lines, in upstream's order; only `recordInUse` touches an
 * allocation recorded by an earlier stage.
 */
class CheckScan {
  readonly lines: CheckLine[] = [];
  readonly showAllIPs: boolean;
  readonly showProblemIPs: boolean;
  /** IP → its allocations (more than one when blocks overlap). */
  readonly allocations = new Map<string, ScannedAllocation[]>();
  /** Node → how many allocations name it. */
  readonly byNode = new Map<string, number>();
  /** IP → what uses it (workloads, node tunnels, Windows' reservation). */
  readonly inUseIPs = new Map<string, Owner[]>();
  /** Handles that some allocation refers to. */
  readonly inUseHandles = new Set<string>();

  constructor(readonly input: CheckInput) {
    this.showAllIPs = input.showAllIPs;
    this.showProblemIPs = input.showAllIPs || input.showProblemIPs;
  }

  progress(text: string): void {
    this.lines.push({ stream: 'progress', text });
  }

  result(text: string): void {
    this.lines.push({ stream: 'result', text });
  }

  recordInUse(ip: string, name: string): void {
    if (this.showAllIPs) this.result(`  ${ip} belongs to ${name}`);
    const owners = this.inUseIPs.get(ip) ?? [];
    owners.push({ name });
    this.inUseIPs.set(ip, owners);
    for (const a of this.allocations.get(ip) ?? []) {
      a.inUse = true;
      a.owners = [...(a.owners ?? []), name];
    }
  }
}

export function runCheck(input: CheckInput): CheckResult {
  const scan = new CheckScan(input);
  scan.progress('Checking IPAM for inconsistencies...');
  scan.progress('');
  loadBlocks(scan);
  const activePools = loadPools(scan);
  loadNodes(scan);
  loadWorkloadEndpoints(scan);
  printTopNodes(scan);

  // Each scan prints its lines as it runs: in this order.
  let problems = leakedIPs(scan);
  problems += unallocatedIPs(scan, activePools);
  const leakedHandles = handlesWithoutIPs(scan);
  problems += leakedHandles.length;
  problems += missingHandles(scan);
  problems += recordProblems(scan);
  scan.result(`Check complete; found ${problems} problems.`);
  return { lines: scan.lines, problems, report: reportOf(input, scan.allocations, leakedHandles) };
}

function loadBlocks(scan: CheckScan): void {
  const { blocks } = scan.input;
  scan.progress('Loading all IPAM blocks...');
  scan.progress(`Found ${blocks.length} IPAM blocks.`);
  let numAllocs = 0;
  for (const b of blocks) {
    scan.progress(` IPAM block ${b.cidr} affinity=${b.affinity ?? '<none>'}:`);
    const blockHost = hostOfAffinity(b.affinity) ?? '';
    for (const a of allocationsOf(b)) {
      numAllocs++;
      const ip = formatIP(a.ip);
      const alloc: ScannedAllocation = {
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
          scan.inUseHandles.add(a.handleId);
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
      const list = scan.allocations.get(ip) ?? [];
      list.push(alloc);
      scan.allocations.set(ip, list);
      scan.byNode.set(node, (scan.byNode.get(node) ?? 0) + 1);
      if (scan.showAllIPs) scan.result(`  ${ip} allocated; attrs ${alloc.attrText}`);
      if (windows) scan.recordInUse(ip, 'Reserved for Windows');
    }
  }
  scan.progress(`IPAM blocks record ${numAllocs} allocations.`);
  scan.progress('');
}

/** The enabled pools' CIDRs. */
function loadPools(scan: CheckScan): Cidr[] {
  scan.progress('Loading all IPAM pools...');
  const activePools: Cidr[] = [];
  for (const p of scan.input.pools) {
    if (p.disabled) continue;
    scan.progress(`  ${p.cidr}`);
    const c = parseCidrOrIP(p.cidr);
    if (!c) throw new CtlError('failed', `failed to parse IP pool CIDR: ${p.cidr}`);
    activePools.push(c);
  }
  scan.progress(`Found ${activePools.length} active IP pools.`);
  scan.progress('');
  return activePools;
}

function loadNodes(scan: CheckScan): void {
  scan.progress('Loading all nodes.');
  let numNodeIPs = 0;
  for (const n of scan.input.nodes) {
    for (const ip of nodeIPs(n)) {
      scan.recordInUse(ip, `Node(${n.metadata.name})`);
      numNodeIPs++;
    }
  }
  scan.progress(`Found ${numNodeIPs} node tunnel IPs.`);
  scan.progress('');
}

function loadWorkloadEndpoints(scan: CheckScan): void {
  scan.progress('Loading all workload endpoints.');
  let numWepIPs = 0;
  for (const w of scan.input.workloadEndpoints) {
    const ns = w.metadata.namespace ?? '';
    const nets = ((w.spec ?? {}) as Obj).ipNetworks;
    for (const net of Array.isArray(nets) ? nets : []) {
      const ip = normaliseIP(String(net), `workload ${ns}/${w.metadata.name}`);
      scan.recordInUse(ip, `Workload(${ns}/${w.metadata.name})`);
      numWepIPs++;
    }
  }
  scan.progress(`Found ${numWepIPs} workload IPs.`);
  scan.progress(`Workloads and nodes are using ${scan.inUseIPs.size} IPs.`);
  scan.progress('');
}

const NODES_TO_PRINT = 20;

function printTopNodes(scan: CheckScan): void {
  const { byNode } = scan;
  scan.progress('Loading all handles');
  scan.progress(`Looking for top (up to ${NODES_TO_PRINT}) nodes by allocations...`);
  const nodes = [...byNode.keys()].sort((a, b) => byNode.get(b)! - byNode.get(a)!);
  for (const n of nodes.slice(0, NODES_TO_PRINT)) scan.result(`  ${n} has ${byNode.get(n)} allocations`);
  if (nodes.length > 0) {
    const max = byNode.get(nodes[0]!)!;
    const median = byNode.get(nodes[nodes.length >> 1]!)!;
    scan.result(`Node with most allocations has ${max}; median is ${median}`);
  }
  scan.result('');
}

/** Allocated IPs nothing uses; returns how many. */
function leakedIPs(scan: CheckScan): number {
  scan.progress('Scanning for IPs that are allocated but not actually in use...');
  let leaked = 0;
  for (const [ip, allocs] of scan.allocations) {
    if (scan.inUseIPs.has(ip)) continue;
    if (scan.showProblemIPs) for (const a of allocs) scan.result(`  ${ip} leaked; attrs ${a.attrText}`);
    leaked++;
  }
  scan.result(`Found ${leaked} IPs that are allocated in IPAM but not actually in use.`);
  return leaked;
}

/** In-use IPs without an allocation, outside every active pool or inside one; returns how many. */
function unallocatedIPs(scan: CheckScan, activePools: readonly Cidr[]): number {
  const { showProblemIPs } = scan;
  scan.progress('Scanning for IPs that are in use by a workload or node but not allocated in IPAM...');
  let notAllocated = 0;
  let nonCalico = 0;
  for (const [ip, owners] of scan.inUseIPs) {
    if (showProblemIPs && owners.length > 1) scan.result(`  ${ip} has multiple owners.`);
    if (scan.allocations.has(ip)) continue;
    const addr = parseIP(ip)!;
    const inPool = activePools.some((c) => cidrContains(c, addr));
    if (!inPool) {
      if (showProblemIPs)
        for (const o of owners) scan.result(`  ${ip} in use by ${o.name} is not in any active IP pool.`);
      nonCalico++;
      continue;
    }
    if (showProblemIPs) {
      for (const o of owners)
        scan.result(`  ${ip} in use by ${o.name} and in active IPAM pool but has no IPAM allocation.`);
    }
    notAllocated++;
  }
  scan.result(`Found ${nonCalico} in-use IPs that are not in active IP pools.`);
  scan.result(
    `Found ${notAllocated} in-use IPs that are in active IP pools but have no corresponding IPAM allocation.`,
  );
  scan.result('');
  return nonCalico + notAllocated;
}

/** Handle records no allocation refers to (the report's leakedHandles). */
function handlesWithoutIPs(scan: CheckScan): ReportHandle[] {
  scan.progress('Scanning for IPAM handles with no matching IPs...');
  const leakedHandles: ReportHandle[] = [];
  let goodHandles = 0;
  for (const [id, revision] of scan.input.handles) {
    if (scan.inUseHandles.has(id)) {
      goodHandles++;
      continue;
    }
    if (scan.showAllIPs) scan.result(`  ${id} doesn't have any active IPs.`);
    leakedHandles.push({ ID: id, UID: null, Revision: revision });
  }
  scan.result(
    `Found ${leakedHandles.length} handles with no matching IPs (and ${goodHandles} handles with matches).`,
  );
  return leakedHandles;
}

/** Handles allocations refer to that have no record; returns how many. */
function missingHandles(scan: CheckScan): number {
  scan.progress('Scanning for IPs with missing handle...');
  let missing = 0;
  for (const id of scan.inUseHandles) {
    if (scan.input.handles.has(id)) continue;
    if (scan.showProblemIPs) scan.result(`  ${id} is in use in a block but doesn't exist.`);
    missing++;
  }
  scan.result(`Found ${missing} handles mentioned in blocks with no matching handle resource.`);
  return missing;
}

const DANGLING_WHY = {
  'node-missing': 'its node does not exist',
  'block-missing': 'its block does not exist',
  'block-affine-elsewhere': 'its block belongs to another host',
} as const;

/** `IpamClient.check()`'s findings: handle counts, dangling affinities; returns how many. */
function recordProblems(scan: CheckScan): number {
  const { showProblemIPs } = scan;
  scan.progress('Scanning for handle counts that disagree with the blocks...');
  const mismatches = scan.input.records.handleCountMismatches;
  if (showProblemIPs) {
    for (const m of mismatches)
      scan.result(`  ${m.handleId} counts ${m.recorded} in block ${m.block}, which holds ${m.actual}.`);
  }
  scan.result(`Found ${mismatches.length} handle counts that disagree with the blocks.`);

  scan.progress('Scanning for block affinities of missing nodes or blocks...');
  const dangling = scan.input.records.danglingAffinities;
  if (showProblemIPs) {
    for (const d of dangling)
      scan.result(`  affinity of ${d.host} for ${d.cidr}: ${DANGLING_WHY[d.reason]}.`);
  }
  scan.result(`Found ${dangling.length} block affinities whose node or block is missing.`);
  return mismatches.length + dangling.length;
}

/** The report: allocations by IP in sorted order, upstream's field order. */
function reportOf(
  input: CheckInput,
  allocations: ReadonlyMap<string, readonly ScannedAllocation[]>,
  leakedHandles: ReportHandle[],
): IpamReport {
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
  return {
    version: input.version,
    clusterGUID: ci?.guid ?? '',
    datastoreLocked: ci?.locked ?? false,
    clusterInformationRevision: ci?.revision ?? '',
    clusterType: ci?.clusterType ?? '',
    allocations: reportAllocs,
    ...(leakedHandles.length > 0 ? { leakedHandles } : {}),
  };
}

/** The report as upstream writes it: Go's indented JSON, 64-bit sequence numbers exact. */
export function formatReport(report: IpamReport): string {
  const text = JSON.stringify(report, (_k, v: unknown) => (typeof v === 'bigint' ? `\u0000big:${v}` : v), 2);
  return text
    .replace(/"\\u0000big:(\d+)"/g, '$1')
    .replace(/[<>&]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
