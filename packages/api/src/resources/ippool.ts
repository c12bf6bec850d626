/**
 * IPPool and IPReservation (upstream `ippool.go`, `ipreservation.go`, validator
 * `validateIPPoolSpec`, clientv3 `ippool.go`). IPPool defaults are applied on write and on read.
 */
import * as z from 'zod';
import type { ResourceObject } from '../meta.js';
import { type Cidr, cidrsOverlap, formatCidr, parseCidrOrIP } from '../net/cidr.js';
import {
  asArr,
  asNum,
  asObj,
  asStr,
  type CheckContext,
  cidrOrIP,
  intBetween,
  nonEmpty,
  oneOf,
  selector,
} from './common.js';
import { goPtr, goVal } from './go-encoding.js';
import { lazySchema } from './lazy-schema.js';

export const ENCAP_MODES = ['Never', 'Always', 'CrossSubnet'] as const;
export type EncapMode = (typeof ENCAP_MODES)[number];
export const IPPOOL_ALLOWED_USES = ['Workload', 'Tunnel', 'LoadBalancer'] as const;
export type IPPoolAllowedUse = (typeof IPPOOL_ALLOWED_USES)[number];

/** Fields in upstream's Go order (`IPPoolSpec`); Go value booleans and the block size drop false/0. */
export const ipPoolSpecSchema = lazySchema(() =>
  z.strictObject({
    cidr: z.string(),
    vxlanMode: oneOf(ENCAP_MODES).optional(),
    ipipMode: oneOf(ENCAP_MODES).optional(),
    natOutgoing: goVal(z.boolean()),
    disabled: goVal(z.boolean()),
    disableBGPExport: goVal(z.boolean()),
    blockSize: goVal(intBetween(0, 128)),
    nodeSelector: selector().optional(),
    namespaceSelector: selector().optional(),
    allowedUses: z.array(oneOf(IPPOOL_ALLOWED_USES)).optional(),
    assignmentMode: goPtr(oneOf(['Automatic', 'Manual'])),
  }),
);
export type IPPoolSpec = z.infer<typeof ipPoolSpecSchema>;
export type IPPool = ResourceObject<'IPPool', IPPoolSpec>;

export const DEFAULT_BLOCK_SIZE_V4 = 26;
export const DEFAULT_BLOCK_SIZE_V6 = 122;
const LINK_LOCAL_V4 = '169.254.0.0/16';
const LINK_LOCAL_V6 = 'fe80::/10';
const LINK_LOCAL_V4_CIDR = parseCidrOrIP(LINK_LOCAL_V4)!;
const LINK_LOCAL_V6_CIDR = parseCidrOrIP(LINK_LOCAL_V6)!;

export function checkIPPool(spec: unknown, ctx: CheckContext): void {
  const s = asObj(spec);
  if (!s) return;
  const { add } = ctx;
  const cidrText = asStr(s.cidr);
  const cidr: Cidr | undefined = cidrText === undefined ? undefined : parseCidrOrIP(cidrText);
  if (cidrText !== undefined && !cidr) {
    add('spec.cidr', 'must be a valid CIDR such as 10.0.0.0/16 or fd00::/48');
  }
  const ipip = asStr(s.ipipMode) ?? 'Never';
  const vxlan = asStr(s.vxlanMode) ?? 'Never';
  const uses = asArr(s.allowedUses) ?? [];
  const loadBalancer = uses.includes('LoadBalancer');
  if (ipip !== 'Never' && vxlan !== 'Never') {
    add('spec.ipipMode', 'cannot be enabled together with vxlanMode; choose one encapsulation');
  }
  if (loadBalancer) {
    if (ipip !== 'Never') add('spec.ipipMode', 'must be Never for a LoadBalancer pool');
    if (vxlan !== 'Never') add('spec.vxlanMode', 'must be Never for a LoadBalancer pool');
    for (const u of ['Workload', 'Tunnel']) {
      if (uses.includes(u)) add('spec.allowedUses', `cannot combine LoadBalancer with ${u}`);
    }
    const ns = s.nodeSelector === undefined ? 'all()' : asStr(s.nodeSelector);
    if (ns !== undefined && ns.trim() !== 'all()')
      add('spec.nodeSelector', 'must be all() for a LoadBalancer pool');
  }
  if (new Set(uses).size !== uses.length) add('spec.allowedUses', 'must not list a use twice');
  if (!cidr) return;

  if (cidr.address !== cidr.network) {
    add('spec.cidr', `is not strictly masked: host bits are set (did you mean ${formatCidr(cidr)}?)`);
  }
  if (cidr.family === 6 && ipip !== 'Never') {
    add('spec.ipipMode', 'must be Never for an IPv6 pool (IPIP carries IPv4 only)');
  }
  if (cidr.family === 4 && cidrsOverlap(cidr, LINK_LOCAL_V4_CIDR)) {
    add('spec.cidr', `overlaps the IPv4 link-local range ${LINK_LOCAL_V4}`);
  }
  if (cidr.family === 6 && cidrsOverlap(cidr, LINK_LOCAL_V6_CIDR)) {
    add('spec.cidr', `overlaps the IPv6 link-local range ${LINK_LOCAL_V6}`);
  }
  const given = asNum(s.blockSize);
  const blockSize = given === undefined || given === 0 ? defaultBlockSize(cidr.family) : given;
  if (given !== undefined && Number.isInteger(given) && given !== 0) {
    const [lo, hi] = cidr.family === 4 ? [20, 32] : [116, 128];
    if (given < lo || given > hi)
      add('spec.blockSize', `must be between ${lo} and ${hi} for IPv${cidr.family}`);
  }
  if (s.disabled !== true && Number.isInteger(blockSize) && cidr.prefix > blockSize) {
    add(
      'spec.cidr',
      `is smaller than one block: prefix /${cidr.prefix} is longer than the block size ${blockSize}; use a larger pool or a larger blockSize`,
    );
  }
}

function defaultBlockSize(family: 4 | 6): number {
  return family === 4 ? DEFAULT_BLOCK_SIZE_V4 : DEFAULT_BLOCK_SIZE_V6;
}

/**
 * Upstream's IPPool defaults on write (`validateAndSetDefaults` in clientv3 `ippool.go`): canonical
 * CIDR, encapsulation modes `Never`, block size 26/122, node selector `all()`, uses
 * `[Workload, Tunnel]`, assignment mode `Automatic`. Returns a new object.
 */
export function defaultIPPool(pool: IPPool): IPPool {
  const spec: IPPoolSpec = { ...pool.spec };
  const cidr = parseCidrOrIP(spec.cidr);
  if (cidr) spec.cidr = formatCidr(cidr);
  fillPoolDefaults(spec, cidr?.family);
  return { ...pool, spec };
}

/**
 * Upstream's IPPool defaults on read (`convertIpPoolFromStorage`): the same fields except that the
 * CIDR is taken as stored. A pool that already has them all is returned as it is.
 */
export function defaultIPPoolOnRead(pool: IPPool): IPPool {
  const s = pool.spec;
  if (
    s.vxlanMode !== undefined &&
    s.ipipMode !== undefined &&
    s.blockSize &&
    nonEmpty(s.nodeSelector) !== undefined &&
    s.allowedUses !== undefined &&
    s.allowedUses.length > 0 &&
    s.assignmentMode !== undefined
  ) {
    return pool;
  }
  const spec: IPPoolSpec = { ...s };
  fillPoolDefaults(spec, s.blockSize ? undefined : parseCidrOrIP(s.cidr)?.family);
  return { ...pool, spec };
}

function fillPoolDefaults(spec: IPPoolSpec, family: 4 | 6 | undefined): void {
  spec.vxlanMode ??= 'Never';
  spec.ipipMode ??= 'Never';
  if (family && !spec.blockSize) spec.blockSize = defaultBlockSize(family);
  if (nonEmpty(spec.nodeSelector) === undefined) spec.nodeSelector = 'all()';
  if (!spec.allowedUses || spec.allowedUses.length === 0) spec.allowedUses = ['Workload', 'Tunnel'];
  spec.assignmentMode ??= 'Automatic';
}

// ---- IPReservation ---------------------------------------------------------------------------

export const ipReservationSpecSchema = lazySchema(() =>
  z.strictObject({
    reservedCIDRs: z.array(cidrOrIP()).optional(),
  }),
);
export type IPReservationSpec = z.infer<typeof ipReservationSpecSchema>;
export type IPReservation = ResourceObject<'IPReservation', IPReservationSpec>;
