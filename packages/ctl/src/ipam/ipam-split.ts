/**
 * `ipam split`'s calculation (pure): the child CIDRs of a pool split into a power of two equal
 * parts, in address order, and the child pools, named and shaped as upstream names and shapes them
 * (`split-<pool>-<i>`, the parent's spec with the child's CIDR, enabled). A child smaller than the
 * pool's IPAM block would make an invalid pool, so that is refused here, before anything changes.
 */
import { type Cidr, formatCidr, parseCidr } from '@calico-ts/api/net';

/** Upstream's limit on a Kubernetes object name, which split names are cut to. */
const MAX_NAME = 253;

export function splitCidr(cidr: string, parts: number): string[] {
  if (!Number.isInteger(parts) || parts < 2 || (parts & (parts - 1)) !== 0) {
    throw new RangeError(`Number to split CIDR into is not a valid power of 2: ${parts}`);
  }
  const c = parseCidr(cidr);
  if (!c) throw new RangeError(`Error reading CIDR ${cidr} before attempting to split it`);
  const power = Math.log2(parts);
  const bits = c.family === 4 ? 32 : 128;
  if (c.prefix + power > bits)
    throw new RangeError(`The CIDR ${cidr} is not large enough to be split into ${parts} parts`);
  const prefix = c.prefix + power;
  const step = 1n << BigInt(bits - prefix);
  const out: string[] = [];
  for (let i = 0n; i < BigInt(parts); i++) {
    const network = c.network + i * step;
    const child: Cidr = { family: c.family, address: network, prefix, network };
    out.push(formatCidr(child));
  }
  return out;
}

export function splitPoolName(parent: string, i: number): string {
  const name = `split-${parent}-${i}`;
  return name.length > MAX_NAME ? `split-${parent.slice(0, 245)}-${i}` : name;
}

export interface PoolLike {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: { cidr: string; blockSize?: number; disabled?: boolean } & Record<string, unknown>;
}

/** The child pools of `pool` split into `parts`: upstream's names, the parent's spec, enabled. */
export function splitPools(pool: PoolLike, parts: number): PoolLike[] {
  const cidrs = splitCidr(pool.spec.cidr, parts);
  const prefix = Number(cidrs[0]!.split('/')[1]);
  const blockSize = pool.spec.blockSize ?? (pool.spec.cidr.includes(':') ? 122 : 26);
  if (prefix > blockSize) {
    throw new RangeError(
      `splitting ${pool.spec.cidr} into ${parts} parts makes /${prefix} pools, smaller than the pool's /${blockSize} blocks; split into fewer parts`,
    );
  }
  return cidrs.map((cidr, i) => ({
    metadata: {
      name: splitPoolName(pool.metadata.name, i),
      ...(pool.metadata.labels ? { labels: { ...pool.metadata.labels } } : {}),
      ...(pool.metadata.annotations ? { annotations: { ...pool.metadata.annotations } } : {}),
    },
    spec: { ...pool.spec, cidr, disabled: false },
  }));
}
