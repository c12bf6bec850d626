/**
 * Node, WorkloadEndpoint, HostEndpoint, NetworkSet and GlobalNetworkSet (upstream internalapi
 * `node.go`, `workloadendpoint.go`; v3 `hostendpoint.go`, `networkset.go`, `globalnetworkset.go`;
 * validator `validateNodeSpec`, `validateWorkloadEndpointSpec`, `validateHostEndpointSpec`).
 */
import * as z from 'zod';
import type { ResourceObject } from '../meta.js';
import { cidrContains, parseCidrOrIP, parseIP } from '../net/cidr.js';
import { asNumberSchema } from './bgp.js';
import {
  asArr,
  asObj,
  asStr,
  type CheckContext,
  cidrOrIP,
  int,
  intBetween,
  ipAddress,
  ipv4Address,
  ipv6Address,
  macAddress,
  maskedCidrOrIP,
  nonEmpty,
  subdomainName,
} from './common.js';
import { goAlways, goField, goVal } from './go-encoding.js';
import { lazySchema } from './lazy-schema.js';
import { protocolSchema, protocolSupportsPorts } from './rule.js';

// ---- Node ------------------------------------------------------------------------------------

const cidrOfFamily = (family: 4 | 6) =>
  z.string().refine((s) => s.includes('/') && parseCidrOrIP(s)?.family === family, {
    error: `must be an IPv${family} address with its prefix length, such as ${family === 4 ? '10.0.0.1/24' : 'fd00::1/64'}`,
  });

export const nodeBGPSpecSchema = lazySchema(() =>
  z.strictObject({
    asNumber: asNumberSchema.optional(),
    ipv4Address: cidrOfFamily(4).optional(),
    ipv6Address: cidrOfFamily(6).optional(),
    ipv4IPIPTunnelAddr: ipv4Address().optional(),
    routeReflectorClusterID: ipv4Address().optional(),
  }),
);
export type NodeBGPSpec = z.infer<typeof nodeBGPSpecSchema>;

export const nodeSpecSchema = lazySchema(() =>
  z.strictObject({
    bgp: nodeBGPSpecSchema.optional(),
    ipv4VXLANTunnelAddr: ipv4Address().optional(),
    vxlanTunnelMACAddr: macAddress().optional(),
    ipv6VXLANTunnelAddr: ipv6Address().optional(),
    vxlanTunnelMACAddrV6: macAddress().optional(),
    orchRefs: z
      .array(z.strictObject({ nodeName: z.string().optional(), orchestrator: goAlways(z.string()) }))
      .optional(),
    wireguard: z
      .strictObject({
        interfaceIPv4Address: ipv4Address().optional(),
        interfaceIPv6Address: ipv6Address().optional(),
      })
      .optional(),
    addresses: z
      .array(
        z.strictObject({
          // An interface address, host bits and all (`198.18.0.11/24`), as upstream stores them.
          address: goAlways(cidrOrIP()),
          type: z
            .enum(['CalicoNodeIP', 'InternalIP', 'ExternalIP'], {
              error: 'must be one of: CalicoNodeIP, InternalIP, ExternalIP',
            })
            .optional(),
        }),
      )
      .optional(),
    interfaces: z
      .array(z.strictObject({ name: z.string().optional(), addresses: z.array(z.string()).optional() }))
      .optional(),
  }),
);
export type NodeSpec = z.infer<typeof nodeSpecSchema>;

/** Upstream's `NodeStatus`, a Go value stored as {} when empty. */
export const nodeStatusSchema = lazySchema(() =>
  z.strictObject({
    wireguardPublicKey: z.string().optional(),
    wireguardPublicKeyV6: z.string().optional(),
    podCIDRs: z.array(z.string()).optional(),
  }),
);
export interface NodeStatus {
  wireguardPublicKey?: string;
  wireguardPublicKeyV6?: string;
  podCIDRs?: string[];
}
export type Node = ResourceObject<'Node', NodeSpec> & { status?: NodeStatus };

export function checkNode(spec: unknown, ctx: CheckContext): void {
  const bgp = asObj(asObj(spec)?.bgp);
  if (bgp && Object.keys(bgp).length === 0) ctx.add('spec.bgp', 'must not be empty: leave it out instead');
}

// ---- WorkloadEndpoint --------------------------------------------------------------------------

const CONTAINER_ID_RE = /^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$/;
const INTERFACE_RE = /^[a-zA-Z0-9_.-]{1,15}$/;
const interfaceName = (allowStar: boolean) =>
  z.string().refine((s) => (allowStar && s === '*') || INTERFACE_RE.test(s), {
    error: `must be an interface name of 1-15 letters, digits, '_', '.' or '-'${allowStar ? " (or '*')" : ''}`,
  });

const PORT_NAME_RULE =
  "must be a port name of at most 15 lower-case letters, digits and '-', with at least one letter and no leading, trailing or double '-'";
function isValidPortName(s: string): boolean {
  return s.length >= 1 && s.length <= 15 && /^[a-z0-9-]+$/.test(s) && /[a-z]/.test(s) && !/^-|-$|--/.test(s);
}
const portName = () => z.string().refine(isValidPortName, { error: PORT_NAME_RULE });
/** A port name or "" (upstream stores an unnamed workload port with `"name":""`). */
const portNameOrEmpty = () =>
  z.string().refine((s) => s === '' || isValidPortName(s), { error: PORT_NAME_RULE });

/** Upstream's `WorkloadEndpointPort` has no `omitempty`: every field is stored, unset ones as "" or 0. */
export const workloadEndpointPortSchema = lazySchema(() =>
  z.strictObject({
    name: goAlways(portNameOrEmpty().optional()),
    protocol: goAlways(protocolSchema),
    port: goAlways(intBetween(1, 65535)),
    hostPort: goAlways(intBetween(0, 65535).optional()),
    hostIP: goAlways(
      z
        .string()
        .refine((s) => s === '' || parseIP(s) !== undefined, { error: 'must be a valid IP address' })
        .optional(),
    ),
  }),
);
export type WorkloadEndpointPort = z.infer<typeof workloadEndpointPortSchema>;

/** Go int64 values with `omitempty`: 0 is left out. */
const qos = () => goVal(int().min(0, { error: 'must not be negative' }));
export const qosControlsSchema = lazySchema(() =>
  z.strictObject({
    ingressBandwidth: qos(),
    ingressBurst: qos(),
    ingressPeakrate: qos(),
    ingressMinburst: qos(),
    egressBandwidth: qos(),
    egressBurst: qos(),
    egressPeakrate: qos(),
    egressMinburst: qos(),
    ingressPacketRate: qos(),
    ingressPacketBurst: qos(),
    egressPacketRate: qos(),
    egressPacketBurst: qos(),
    ingressMaxConnections: qos(),
    egressMaxConnections: qos(),
    dscp: goField(
      z.union([intBetween(0, 63), z.string()], { error: 'must be a DSCP number (0-63) or name' }),
      {
        value: 'uint8OrString',
      },
    ).optional(),
  }),
);
export type QoSControls = z.infer<typeof qosControlsSchema>;

export const workloadEndpointSpecSchema = lazySchema(() =>
  z.strictObject({
    orchestrator: subdomainName().optional(),
    workload: subdomainName().optional(),
    node: subdomainName().optional(),
    containerID: z
      .string()
      .refine((s) => CONTAINER_ID_RE.test(s), { error: "must consist of letters, digits and '-'" })
      .optional(),
    pod: subdomainName().optional(),
    endpoint: subdomainName().optional(),
    serviceAccountName: subdomainName().optional(),
    ipNetworks: z.array(maskedCidrOrIP()).optional(),
    ipNATs: z
      .array(z.strictObject({ internalIP: goAlways(ipAddress()), externalIP: goAlways(ipAddress()) }))
      .optional(),
    ipv4Gateway: ipv4Address().optional(),
    ipv6Gateway: ipv6Address().optional(),
    profiles: z.array(subdomainName()).optional(),
    interfaceName: interfaceName(false).optional(),
    mac: macAddress().optional(),
    ports: z.array(workloadEndpointPortSchema).optional(),
    allowSpoofedSourcePrefixes: z.array(cidrOrIP()).optional(),
    qosControls: qosControlsSchema.optional(),
  }),
);
export type WorkloadEndpointSpec = z.infer<typeof workloadEndpointSpecSchema>;
export type WorkloadEndpoint = ResourceObject<'WorkloadEndpoint', WorkloadEndpointSpec>;

export const NAMESPACE_LABEL = 'projectcalico.org/namespace';
export const ORCHESTRATOR_LABEL = 'projectcalico.org/orchestrator';

export function checkWorkloadEndpoint(spec: unknown, ctx: CheckContext): void {
  const s = asObj(spec);
  if (!s) return;
  const { add } = ctx;
  const nets = (asArr(s.ipNetworks) ?? []).map((n) => (typeof n === 'string' ? parseCidrOrIP(n) : undefined));
  nets.forEach((c, i) => {
    if (c && c.prefix !== (c.family === 4 ? 32 : 128)) {
      add(`spec.ipNetworks[${i}]`, `must be a single address (/${c.family === 4 ? 32 : 128})`);
    }
  });
  asArr(s.ipNATs)?.forEach((n, i) => {
    const o = asObj(n);
    const internal = asStr(o?.internalIP);
    const external = asStr(o?.externalIP);
    const ic = internal === undefined ? undefined : parseCidrOrIP(internal);
    const ec = external === undefined ? undefined : parseCidrOrIP(external);
    if (ic && ec && ic.family !== ec.family)
      add(`spec.ipNATs[${i}].externalIP`, 'must be of the same IP version as internalIP');
    if (ic && !nets.some((c) => c !== undefined && cidrContains(c, ic))) {
      add(`spec.ipNATs[${i}].internalIP`, "must be one of the endpoint's ipNetworks");
    }
  });
  asArr(s.ports)?.forEach((p, i) => {
    const o = asObj(p);
    if (!o) return;
    if (o.protocol !== undefined && !protocolSupportsPorts(o.protocol)) {
      add(`spec.ports[${i}].protocol`, 'must be TCP, UDP or SCTP (only they have ports)');
    }
    if (nonEmpty(o.name) === undefined && (o.hostPort === undefined || o.hostPort === 0)) {
      add(`spec.ports[${i}].name`, 'is required unless hostPort is set');
    }
  });
}

/**
 * clientv3 sets the namespace and orchestrator labels of every WorkloadEndpoint it writes, the
 * orchestrator label also when the spec names none (then it is "").
 */
export function defaultWorkloadEndpoint(w: WorkloadEndpoint): WorkloadEndpoint {
  const labels = { ...(w.metadata.labels ?? {}) };
  labels[NAMESPACE_LABEL] = w.metadata.namespace ?? '';
  labels[ORCHESTRATOR_LABEL] = w.spec.orchestrator ?? '';
  return { ...w, metadata: { ...w.metadata, labels } };
}

// ---- HostEndpoint ------------------------------------------------------------------------------

export const endpointPortSchema = lazySchema(() =>
  z.strictObject({
    name: goAlways(portName()),
    protocol: goAlways(protocolSchema),
    port: goAlways(intBetween(1, 65535)),
  }),
);
export type EndpointPort = z.infer<typeof endpointPortSchema>;

export const hostEndpointSpecSchema = lazySchema(() =>
  z.strictObject({
    node: subdomainName().optional(),
    interfaceName: interfaceName(true).optional(),
    expectedIPs: z.array(ipAddress()).optional(),
    profiles: z.array(subdomainName()).optional(),
    ports: z.array(endpointPortSchema).optional(),
  }),
);
export type HostEndpointSpec = z.infer<typeof hostEndpointSpecSchema>;
export type HostEndpoint = ResourceObject<'HostEndpoint', HostEndpointSpec>;

export function checkHostEndpoint(spec: unknown, ctx: CheckContext): void {
  const s = asObj(spec);
  if (!s) return;
  if (nonEmpty(s.node) === undefined) ctx.add('spec.node', 'is required');
  if (nonEmpty(s.interfaceName) === undefined && (asArr(s.expectedIPs)?.length ?? 0) === 0) {
    ctx.add('spec', 'must set interfaceName or expectedIPs (or both)');
  }
  asArr(s.ports)?.forEach((p, i) => {
    const proto = asObj(p)?.protocol;
    if (proto !== undefined && !protocolSupportsPorts(proto)) {
      ctx.add(`spec.ports[${i}].protocol`, 'must be TCP, UDP or SCTP (only they have ports)');
    }
  });
}

// ---- NetworkSet / GlobalNetworkSet -------------------------------------------------------------

export const networkSetSpecSchema = lazySchema(() =>
  z.strictObject({
    nets: z.array(cidrOrIP()).optional(),
  }),
);
export type NetworkSetSpec = z.infer<typeof networkSetSpecSchema>;
export type NetworkSet = ResourceObject<'NetworkSet', NetworkSetSpec>;

export const globalNetworkSetSpecSchema = networkSetSpecSchema;
export type GlobalNetworkSetSpec = NetworkSetSpec;
export type GlobalNetworkSet = ResourceObject<'GlobalNetworkSet', GlobalNetworkSetSpec>;

export function checkNetworkSet(_spec: unknown, ctx: CheckContext): void {
  if (ctx.labels && Object.hasOwn(ctx.labels, NAMESPACE_LABEL)) {
    ctx.add(`metadata.labels["${NAMESPACE_LABEL}"]`, 'is reserved: Calico sets it itself');
  }
}
