/**
 * BGPConfiguration, BGPPeer and BGPFilter (upstream `bgpconfig.go`, `bgppeer.go`, `bgpfilter.go`,
 * validator `validateBGPConfigurationSpec`, `validateBGPPeerSpec`, `validateBGPFilterRule*`,
 * clientv3 `bgpconfig.go` default-only fields).
 */
import * as z from 'zod';
import type { ResourceObject } from '../meta.js';
import { parseCidrOrIP, parseIP } from '../net/cidr.js';
import {
  asArr,
  asObj,
  asStr,
  type CheckContext,
  cidrOrIP,
  duration,
  intBetween,
  nonEmpty,
  oneOf,
  secretKeyRef,
  selector,
  subdomainName,
} from './common.js';
import { goAlways, goField, goPtr, goVal } from './go-encoding.js';
import { lazySchema } from './lazy-schema.js';

export const LOG_LEVELS = ['Trace', 'Debug', 'Info', 'Warning', 'Error', 'Fatal'] as const;

const ASN_RULE = 'must be an AS number: 0-4294967295, or "high.low" with each part 0-65535';
/**
 * Upstream `numorstring.ASNumber`: a 32-bit number, or the dotted `high.low` form. Upstream stores
 * it as a number in either case.
 */
export const asNumberSchema = lazySchema(() =>
  goField(
    z.union([z.number(), z.string()], { error: ASN_RULE }).superRefine((v, ctx) => {
      let ok: boolean;
      if (typeof v === 'number') ok = Number.isInteger(v) && v >= 0 && v <= 4294967295;
      else {
        const m = /^([0-9]+)(\.([0-9]+))?$/.exec(v);
        ok =
          m !== null &&
          (m[3] === undefined ? Number(m[1]) <= 4294967295 : Number(m[1]) <= 65535 && Number(m[3]) <= 65535);
      }
      if (!ok) ctx.addIssue({ code: 'custom', message: ASN_RULE });
    }),
    { value: 'asNumber' },
  ),
);
export type ASNumber = z.infer<typeof asNumberSchema>;

const COMMUNITY_RULE = 'must be a BGP community "aa:nn" (16-bit numbers) or "aa:nn:mm" (32-bit numbers)';
export function isCommunityValue(v: string): boolean {
  const std = /^([0-9]+):([0-9]+)$/.exec(v);
  if (std) return Number(std[1]) <= 65535 && Number(std[2]) <= 65535;
  const large = /^([0-9]+):([0-9]+):([0-9]+)$/.exec(v);
  if (large) return [large[1], large[2], large[3]].every((x) => Number(x) <= 4294967295);
  return false;
}
const communityValue = () => z.string().refine(isCommunityValue, { error: COMMUNITY_RULE });

const IGNORED_IFACE_RE = /^[a-zA-Z0-9_.*-]{1,15}$/;
const cidrEntry = () => z.strictObject({ cidr: cidrOrIP() });
const routePriority = () => intBetween(1, 2147483646);

/** Fields in upstream's Go order (`BGPConfigurationSpec`). */
export const bgpConfigurationSpecSchema = lazySchema(() =>
  z.strictObject({
    logSeverityScreen: oneOf(LOG_LEVELS).optional(),
    nodeToNodeMeshEnabled: z.boolean().optional(),
    asNumber: asNumberSchema.optional(),
    serviceLoadBalancerIPs: z.array(cidrEntry()).optional(),
    serviceExternalIPs: z.array(cidrEntry()).optional(),
    serviceClusterIPs: z.array(cidrEntry()).optional(),
    serviceLoadBalancerAggregation: goPtr(oneOf(['Enabled', 'Disabled'])),
    communities: z
      .array(z.strictObject({ name: z.string().optional(), value: communityValue().optional() }))
      .optional(),
    prefixAdvertisements: z
      .array(z.strictObject({ cidr: cidrOrIP().optional(), communities: z.array(z.string()).optional() }))
      .optional(),
    listenPort: goVal(intBetween(1, 65535)),
    nodeMeshPassword: secretKeyRef().optional(),
    nodeMeshMaxRestartTime: duration().optional(),
    bindMode: goPtr(oneOf(['None', 'NodeIP'])),
    ignoredInterfaces: z
      .array(
        z.string().refine((s) => s !== '*' && IGNORED_IFACE_RE.test(s), {
          error:
            "must be an interface name or pattern of 1-15 characters (letters, digits, '_', '.', '-', '*'), not just '*'",
        }),
      )
      .optional(),
    localWorkloadPeeringIPV4: z.string().optional(),
    localWorkloadPeeringIPV6: z.string().optional(),
    programClusterRoutes: goPtr(oneOf(['Enabled', 'Disabled'])),
    ipv4NormalRoutePriority: routePriority().optional(),
    ipv6NormalRoutePriority: routePriority().optional(),
  }),
);
export type BGPConfigurationSpec = z.infer<typeof bgpConfigurationSpecSchema>;
export type BGPConfiguration = ResourceObject<'BGPConfiguration', BGPConfigurationSpec>;

const DEFAULT_ONLY_BGP_FIELDS = [
  'nodeToNodeMeshEnabled',
  'asNumber',
  'serviceLoadBalancerIPs',
  'serviceExternalIPs',
  'serviceClusterIPs',
] as const;

export function checkBGPConfiguration(spec: unknown, ctx: CheckContext): void {
  const s = asObj(spec);
  if (!s) return;
  const { add } = ctx;
  const communities = asArr(s.communities) ?? [];
  const prefixAds = asArr(s.prefixAdvertisements) ?? [];
  if (communities.length > 0 && prefixAds.length === 0) {
    add('spec.communities', 'are defined but not used: no spec.prefixAdvertisements entry refers to them');
  }
  const names = new Set(communities.map((c) => asStr(asObj(c)?.name)).filter((n) => n !== undefined));
  prefixAds.forEach((pa, i) => {
    const o = asObj(pa);
    if (o && nonEmpty(o.cidr) === undefined) add(`spec.prefixAdvertisements[${i}].cidr`, 'is required');
    asArr(o?.communities)?.forEach((c, j) => {
      if (typeof c === 'string' && !isCommunityValue(c) && !names.has(c)) {
        add(
          `spec.prefixAdvertisements[${i}].communities[${j}]`,
          'must be a community value ("aa:nn" or "aa:nn:mm") or the name of an entry in spec.communities',
        );
      }
    });
  });
  if (s.nodeToNodeMeshEnabled === false) {
    if (s.nodeMeshPassword !== undefined)
      add('spec.nodeMeshPassword', 'cannot be set when nodeToNodeMeshEnabled is false');
    if (s.nodeMeshMaxRestartTime !== undefined) {
      add('spec.nodeMeshMaxRestartTime', 'cannot be set when nodeToNodeMeshEnabled is false');
    }
  }
  if (ctx.name !== undefined && ctx.name !== 'default') {
    for (const f of DEFAULT_ONLY_BGP_FIELDS) {
      const v = s[f];
      if (v !== undefined && !(Array.isArray(v) && v.length === 0)) {
        add(`spec.${f}`, 'can only be set in the BGPConfiguration named "default"');
      }
    }
  }
  for (const [f, fam] of [
    ['localWorkloadPeeringIPV4', 4],
    ['localWorkloadPeeringIPV6', 6],
  ] as const) {
    const v = nonEmpty(s[f]);
    if (v !== undefined && parseIP(v)?.family !== fam) add(`spec.${f}`, `must be a valid IPv${fam} address`);
  }
}

// ---- BGPPeer ---------------------------------------------------------------------------------

const PEER_IP_RULE = 'must be an IP address, optionally with a port: <IPv4>:<port> or [<IPv6>]:<port>';

/** Splits `ip`, `ip:port` or `[ipv6]:port`; undefined if malformed. */
export function parsePeerIP(text: string): { ip: string; port?: number } | undefined {
  if (parseIP(text)) return { ip: text };
  const v6 = /^\[([0-9a-fA-F:.]+)\]:([0-9]{1,5})$/.exec(text);
  const v4 = /^([0-9.]+):([0-9]{1,5})$/.exec(text);
  const m = v6 ?? v4;
  if (!m) return undefined;
  const ip = parseIP(m[1]!);
  const port = Number(m[2]);
  if (!ip || (v6 && ip.family !== 6) || (v4 && ip.family !== 4) || port < 1 || port > 65535) return undefined;
  return { ip: m[1]!, port };
}

/** Fields in upstream's Go order (`BGPPeerSpec`); `asNumber` is a Go value (0 is left out). */
export const bgpPeerSpecSchema = lazySchema(() =>
  z.strictObject({
    node: subdomainName().optional(),
    nodeSelector: selector().optional(),
    peerIP: z
      .string()
      .refine((s) => s === '' || parsePeerIP(s) !== undefined, { error: PEER_IP_RULE })
      .optional(),
    asNumber: goVal(asNumberSchema),
    localASNumber: asNumberSchema.optional(),
    peerSelector: selector().optional(),
    keepOriginalNextHop: goVal(z.boolean()),
    nextHopMode: goPtr(oneOf(['Auto', 'Self', 'Keep'])),
    password: secretKeyRef().optional(),
    sourceAddress: oneOf(['UseNodeIP', 'None']).optional(),
    maxRestartTime: duration().optional(),
    keepaliveTime: duration().optional(),
    numAllowedLocalASNumbers: intBetween(0, 2147483647).optional(),
    ttlSecurity: intBetween(0, 255).optional(),
    filters: z.array(subdomainName()).optional(),
    reachableBy: z.string().optional(),
    localWorkloadSelector: selector().optional(),
    reversePeering: goPtr(oneOf(['Auto', 'Manual'])),
  }),
);
export type BGPPeerSpec = z.infer<typeof bgpPeerSpecSchema>;
export type BGPPeer = ResourceObject<'BGPPeer', BGPPeerSpec>;

function asnIsSet(v: unknown): boolean {
  return v !== undefined && v !== 0 && v !== '0';
}

export function checkBGPPeer(spec: unknown, ctx: CheckContext): void {
  const s = asObj(spec);
  if (!s) return;
  const { add } = ctx;
  const peerIP = nonEmpty(s.peerIP);
  const peerSelector = nonEmpty(s.peerSelector);
  const lws = nonEmpty(s.localWorkloadSelector);
  if (nonEmpty(s.node) !== undefined && nonEmpty(s.nodeSelector) !== undefined) {
    add('spec.nodeSelector', 'cannot be set together with node; use one or the other');
  }
  if (peerIP !== undefined && peerSelector !== undefined) {
    add('spec.peerSelector', 'cannot be set together with peerIP; use one or the other');
  }
  if (peerSelector !== undefined && asnIsSet(s.asNumber)) {
    add('spec.asNumber', "must be empty when peerSelector is set (each peer node's AS number is used)");
  }
  if (lws !== undefined) {
    if (!asnIsSet(s.asNumber)) add('spec.asNumber', 'is required when localWorkloadSelector is set');
    if (peerIP !== undefined) add('spec.peerIP', 'must be empty when localWorkloadSelector is set');
    if (peerSelector !== undefined)
      add('spec.peerSelector', 'must be empty when localWorkloadSelector is set');
  }
  const reachableBy = nonEmpty(s.reachableBy);
  if (reachableBy !== undefined) {
    const via = parseIP(reachableBy);
    const peer = peerIP === undefined ? undefined : parsePeerIP(peerIP);
    if (!via) add('spec.reachableBy', 'must be a valid IP address');
    else if (peerIP === undefined) add('spec.reachableBy', 'can only be set together with peerIP');
    else if (peer && parseIP(peer.ip)?.family !== via.family) {
      add('spec.reachableBy', 'must be of the same IP version as peerIP');
    }
  }
  if (s.keepOriginalNextHop === true && s.nextHopMode !== undefined) {
    add(
      'spec.keepOriginalNextHop',
      'cannot be true when nextHopMode is set (it is deprecated; use nextHopMode)',
    );
  }
}

// ---- BGPFilter -------------------------------------------------------------------------------

const BGP_FILTER_IFACE_RE = /^[a-zA-Z0-9_.*-]{1,15}$/;

function filterRuleSchema(family: 4 | 6) {
  const bits = family === 4 ? 32 : 128;
  const cidr = z.string().superRefine((s, ctx) => {
    const c = parseCidrOrIP(s);
    if (!c || c.family !== family)
      ctx.addIssue({ code: 'custom', message: `must be a valid IPv${family} CIDR` });
    else if (c.address !== c.network)
      ctx.addIssue({ code: 'custom', message: 'must not have host bits set' });
  });
  return z.strictObject({
    cidr: cidr.optional(),
    prefixLength: z
      .strictObject({ min: intBetween(0, bits).optional(), max: intBetween(0, bits).optional() })
      .optional(),
    source: oneOf(['RemotePeers']).optional(),
    interface: z
      .string()
      .refine((s) => BGP_FILTER_IFACE_RE.test(s), {
        error:
          "must be an interface name or pattern of 1-15 characters (letters, digits, '_', '.', '-', '*')",
      })
      .optional(),
    matchOperator: oneOf(['Equal', 'NotEqual', 'In', 'NotIn']).optional(),
    peerType: oneOf(['eBGP', 'iBGP']).optional(),
    communities: z
      .strictObject({
        values: goAlways(z.array(communityValue()).min(1).max(1, { error: 'must hold exactly one value' })),
      })
      .optional(),
    asPathPrefix: z.array(asNumberSchema).optional(),
    priority: intBetween(1, 2147483646).optional(),
    action: goAlways(oneOf(['Accept', 'Reject'])),
    operations: z
      .array(
        z.strictObject({
          addCommunity: z.strictObject({ value: goAlways(communityValue()) }).optional(),
          prependASPath: z
            .strictObject({ prefix: goAlways(z.array(asNumberSchema).min(1).max(10)) })
            .optional(),
          setPriority: z.strictObject({ value: goAlways(intBetween(1, 2147483646)) }).optional(),
        }),
      )
      .max(10)
      .optional(),
  });
}

export const bgpFilterRuleV4Schema = lazySchema(() => filterRuleSchema(4));
export const bgpFilterRuleV6Schema = lazySchema(() => filterRuleSchema(6));
export type BGPFilterRuleV4 = z.infer<typeof bgpFilterRuleV4Schema>;
export type BGPFilterRuleV6 = z.infer<typeof bgpFilterRuleV6Schema>;

export const bgpFilterSpecSchema = lazySchema(() =>
  z.strictObject({
    exportV4: z.array(bgpFilterRuleV4Schema).optional(),
    importV4: z.array(bgpFilterRuleV4Schema).optional(),
    exportV6: z.array(bgpFilterRuleV6Schema).optional(),
    importV6: z.array(bgpFilterRuleV6Schema).optional(),
  }),
);
export type BGPFilterSpec = z.infer<typeof bgpFilterSpecSchema>;
export type BGPFilter = ResourceObject<'BGPFilter', BGPFilterSpec>;

export function checkBGPFilter(spec: unknown, ctx: CheckContext): void {
  const s = asObj(spec);
  if (!s) return;
  const { add } = ctx;
  for (const list of ['exportV4', 'importV4', 'exportV6', 'importV6'] as const) {
    asArr(s[list])?.forEach((r, i) => {
      const o = asObj(r);
      if (!o) return;
      const p = `spec.${list}[${i}]`;
      const cidr = nonEmpty(o.cidr);
      const op = nonEmpty(o.matchOperator);
      if (cidr !== undefined && op === undefined) add(`${p}.matchOperator`, 'is required when cidr is set');
      if (cidr === undefined && op !== undefined) add(`${p}.cidr`, 'is required when matchOperator is set');
      if (o.prefixLength !== undefined && cidr === undefined)
        add(`${p}.prefixLength`, 'needs cidr to be set');
      const pl = asObj(o.prefixLength);
      if (pl && typeof pl.min === 'number' && typeof pl.max === 'number' && pl.min > pl.max) {
        add(`${p}.prefixLength`, 'min must not be greater than max');
      }
      if (list.startsWith('import') && nonEmpty(o.source) !== undefined) {
        add(`${p}.source`, 'does not apply to import rules (imported routes always come from peers)');
      }
      const ops = asArr(o.operations);
      if (ops && ops.length > 0 && o.action !== undefined && o.action !== 'Accept') {
        add(`${p}.operations`, 'may only be used with action Accept');
      }
      ops?.forEach((x, j) => {
        const xo = asObj(x);
        if (!xo) return;
        const n = ['addCommunity', 'prependASPath', 'setPriority'].filter((k) => xo[k] !== undefined).length;
        if (n !== 1) {
          add(`${p}.operations[${j}]`, 'must set exactly one of addCommunity, prependASPath, setPriority');
        }
      });
    });
  }
}
