/**
 * How upstream's v1→v3 upgrade turns v1 identifiers into v3 resource names
 * (`libcalico-go/lib/upgrade/converters/names.go`, `lib/names`).
 */
import { type Cidr, formatIP, type IPAddress } from '../net/cidr.js';

/**
 * The standard name normalisation: lower-case; `/` → `.`; any run of characters outside
 * `[-.a-z0-9]` → `-`; any run of `.`/`-` holding at least one `.` → `.`; leading and trailing
 * dots and dashes removed.
 */
export function normalizeName(name: string): string {
  let n = name.toLowerCase();
  n = n.replaceAll('/', '.');
  n = n.replace(/[^-.a-z0-9]+/g, '-');
  n = n.replace(/[.-]*\.[.-]*/g, '.');
  return n.replace(/^[.-]+/, '').replace(/[.-]+$/, '');
}

/** `final`, or `final-<first 8 hex of SHA-1(orig)>` when normalisation changed the name. */
export function qualifiedName(orig: string, final: string): string {
  if (orig === final) return orig;
  // node:crypto loaded on first use: a one-shot program that never converts a name does not pay for it.
  const digest = process
    .getBuiltinModule('node:crypto')
    .createHash('sha1')
    .update(orig, 'utf8')
    .digest('hex');
  return `${final}-${digest.slice(0, 8)}`;
}

/** Normalised, with a qualifier when that changed it. */
export function convertName(v1Name: string): string {
  return qualifiedName(v1Name, normalizeName(v1Name));
}

/** Normalised with dots turned into dashes, with a qualifier when that changed it. */
export function convertNameNoDots(v1Name: string): string {
  return qualifiedName(v1Name, normalizeName(v1Name).replaceAll('.', '-'));
}

/** Node names are normalised but never qualified (clashes are an upgrade-time error upstream). */
export function convertNodeName(v1Name: string): string {
  return normalizeName(v1Name);
}

/** A CIDR printed as written (host bits kept), the way Go prints a `net.IPNet` holding them. */
export function formatCidrAsWritten(c: Cidr): string {
  return `${formatIP({ family: c.family, value: c.address })}/${c.prefix}`;
}

/** An IP pool's name: its CIDR text with `.`, `:` and `/` turned into `-` (`names.CIDRToName`). */
export function cidrToName(cidr: Cidr): string {
  return formatCidrAsWritten(cidr).replace(/[.:/]/g, '-');
}

/** `1-2-3-4` for IPv4; all eight IPv6 words, zero-padded, joined by `-`. */
export function ipToName(ip: IPAddress): string {
  if (ip.family === 4) return formatIP(ip).replaceAll('.', '-');
  const words: string[] = [];
  for (let i = 7; i >= 0; i--)
    words.push(((ip.value >> BigInt(16 * i)) & 0xffffn).toString(16).padStart(4, '0'));
  return words.join('-');
}

/** Identifiers from which a WorkloadEndpoint's name is computed. */
export interface WorkloadEndpointIds {
  node: string;
  orchestrator: string;
  endpoint: string;
  workload?: string;
  pod?: string;
  containerID?: string;
}

/**
 * The only name a WorkloadEndpoint may have: segments joined by `-`, a `-` inside a segment
 * doubled. k8s `<node>-k8s-<pod>-<endpoint>`, cni `<node>-cni-<containerID>-<endpoint>`,
 * libnetwork `<node>-libnetwork-libnetwork-<endpoint>`, other `<node>-<orch>-<workload>-<endpoint>`.
 * Returns the field name and reason when a segment is empty or starts/ends with `-`.
 */
export function workloadEndpointName(
  ids: WorkloadEndpointIds,
): { name: string } | { field: string; reason: string } {
  const node = { field: 'node', value: ids.node };
  const orch = { field: 'orchestrator', value: ids.orchestrator };
  const endpoint = { field: 'endpoint', value: ids.endpoint };
  let segments: { field: string; value: string | undefined }[];
  switch (ids.orchestrator) {
    case 'k8s':
      segments = [node, orch, { field: 'pod', value: ids.pod }, endpoint];
      break;
    case 'cni':
      segments = [node, orch, { field: 'containerID', value: ids.containerID }, endpoint];
      break;
    case 'libnetwork':
      segments = [node, orch, orch, endpoint];
      break;
    default:
      segments = [node, orch, { field: 'workload', value: ids.workload }, endpoint];
  }
  const parts: string[] = [];
  for (const s of segments) {
    if (!s.value) return { field: s.field, reason: 'must be set' };
    if (s.value.startsWith('-')) return { field: s.field, reason: "must not begin with '-'" };
    if (s.value.endsWith('-')) return { field: s.field, reason: "must not end with '-'" };
    parts.push(s.value.replaceAll('-', '--'));
  }
  return { name: parts.join('-') };
}
