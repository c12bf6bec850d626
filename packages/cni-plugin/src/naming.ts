/**
 * Names the plugin derives (pure): the host-side veth, the WorkloadEndpoint, the IPAM handle.
 *
 * - Host veth (upstream `workload_endpoint_default.go`): `<prefix>` + the first 11 hex characters of
 *   SHA-1("<namespace>.<pod>") for a Kubernetes pod; for any other workload the first 11 characters
 *   of the container ID. The prefix is the first entry of FELIX_INTERFACEPREFIX, or `cali`. Upstream
 *   hard-codes `cali` for non-Kubernetes workloads; we use the configured prefix for both, so Felix
 *   (which matches interfaces by that prefix) always recognises the device.
 * - WorkloadEndpoint name (`libcalico-go/lib/names/workloadendpoint.go`): segments joined by `-`,
 *   each segment's own `-` doubled: `<node>-k8s-<pod>-<iface>`, `<node>-cni-<containerID>-<iface>`.
 *   A segment may not be empty, nor start or end with `-`.
 * - IPAM handle: `<network name>.<containerID>`.
 */
import { createHash } from 'node:crypto';
import { CniPluginError } from './errors.js';
import type { Orchestrator } from './spec/cni-args.js';

export const DEFAULT_INTERFACE_PREFIX = 'cali';
/** Linux IFNAMSIZ - 1. */
const MAX_IFNAME = 15;

/** The first entry of FELIX_INTERFACEPREFIX (a comma list), or `cali`. */
export function interfacePrefix(felixInterfacePrefix: string | undefined): string {
  const first = (felixInterfacePrefix ?? '').split(',')[0]?.trim() ?? '';
  return first === '' ? DEFAULT_INTERFACE_PREFIX : first;
}

export interface VethNameInput {
  orchestrator: Orchestrator;
  namespace: string;
  pod?: string;
  containerId: string;
  prefix?: string;
}

export function hostVethName(input: VethNameInput): string {
  const prefix = input.prefix ?? DEFAULT_INTERFACE_PREFIX;
  if (prefix.length >= MAX_IFNAME - 3) {
    throw new CniPluginError(
      'invalid-config',
      `interface prefix "${prefix}" leaves no room for a workload suffix`,
    );
  }
  const room = Math.min(11, MAX_IFNAME - prefix.length);
  if (input.orchestrator === 'k8s') {
    if (!input.pod) throw new CniPluginError('internal', 'a Kubernetes workload needs a pod name');
    const digest = createHash('sha1').update(`${input.namespace}.${input.pod}`).digest('hex');
    return prefix + digest.slice(0, room);
  }
  return prefix + input.containerId.slice(0, room);
}

export interface WorkloadEndpointIds {
  node: string;
  orchestrator: Orchestrator;
  /** k8s only. */
  pod?: string;
  /** cni only (part of the name); always stored in the spec. */
  containerId?: string;
  /** The interface inside the workload (CNI_IFNAME). */
  endpoint: string;
}

interface Segment {
  field: string;
  value: string | undefined;
}

function segments(ids: WorkloadEndpointIds): Segment[] {
  const node = { field: 'node', value: ids.node };
  const orch = { field: 'orchestrator', value: ids.orchestrator };
  const endpoint = { field: 'endpoint', value: ids.endpoint };
  return ids.orchestrator === 'k8s'
    ? [node, orch, { field: 'pod', value: ids.pod }, endpoint]
    : [node, orch, { field: 'containerID', value: ids.containerId }, endpoint];
}

function escapeSegment(s: Segment): string {
  const v = s.value ?? '';
  if (v === '') throw new CniPluginError('invalid-config', `WorkloadEndpoint name: ${s.field} must be set`);
  if (v.startsWith('-')) {
    throw new CniPluginError(
      'invalid-config',
      `WorkloadEndpoint name: ${s.field} "${v}" must not begin with "-"`,
    );
  }
  if (v.endsWith('-')) {
    throw new CniPluginError(
      'invalid-config',
      `WorkloadEndpoint name: ${s.field} "${v}" must not end with "-"`,
    );
  }
  return v.replaceAll('-', '--');
}

/** The full WorkloadEndpoint name. */
export function workloadEndpointName(ids: WorkloadEndpointIds): string {
  return segments(ids).map(escapeSegment).join('-');
}

/** The name up to (and including the `-` before) the endpoint segment: lists one workload's endpoints. */
export function workloadEndpointNamePrefix(ids: Omit<WorkloadEndpointIds, 'endpoint'>): string {
  const segs = segments({ ...ids, endpoint: 'x' }).slice(0, 3);
  return `${segs.map(escapeSegment).join('-')}-`;
}

/** Splits a WorkloadEndpoint name into its unescaped segments (`--` is a literal dash). */
export function splitWorkloadEndpointName(name: string): string[] {
  if (name === '') return [];
  const parts: string[] = [];
  let cur = name[0]!;
  for (let i = 1; i < name.length; i++) {
    const c = name[i]!;
    if (c !== '-') {
      cur += c;
    } else if (name[i + 1] === '-') {
      cur += '-';
      i++;
    } else {
      parts.push(cur);
      cur = '';
    }
  }
  parts.push(cur);
  return parts;
}

export function ipamHandleId(networkName: string, containerId: string): string {
  return `${networkName}.${containerId}`;
}

/**
 * The container ID of a pod handle of this network, or undefined for any other handle (another
 * network's, tunnel addresses, pre-v3 `<namespace>.<pod>` handles with a further dot).
 */
export function containerIdOfHandle(handleId: string, networkName: string): string | undefined {
  const clean = handleId.split('\r')[0]!;
  if (!clean.startsWith(`${networkName}.`)) return undefined;
  const rest = clean.slice(networkName.length + 1);
  if (rest === '' || rest.includes('.')) return undefined;
  return rest;
}

/** Upstream's handle for workloads set up before v3 (released on DEL as well). */
export function legacyHandleId(ids: {
  orchestrator: Orchestrator;
  namespace: string;
  pod?: string;
  containerId: string;
}): string {
  return ids.orchestrator === 'k8s' ? `${ids.namespace}.${ids.pod}` : ids.containerId;
}
