import { type Cidr, cidrContains, cidrsOverlap, parseCidrOrIP } from '@calico-ts/api/net';
import { cidrContainsIp, cidrLast, type IPAddress, makeCidr } from './ip-math.js';

/**
 * The addresses IPAM must never hand out automatically: the union of every IPReservation's
 * `reservedCIDRs` (CIDRs or bare addresses). Reservations block new allocations only; addresses
 * already assigned inside them stay assigned.
 */
export class ReservedAddresses {
  private readonly cidrs: Cidr[];

  constructor(cidrs: readonly Cidr[]) {
    this.cidrs = [...cidrs];
  }

  /** Build from reservation text; entries that are neither an address nor a CIDR are returned as `invalid`. */
  static fromText(entries: readonly string[]): { reserved: ReservedAddresses; invalid: string[] } {
    const cidrs: Cidr[] = [];
    const invalid: string[] = [];
    for (const e of entries) {
      const c = parseCidrOrIP(e.trim());
      if (c) cidrs.push(makeCidr(c.family, c.network, c.prefix));
      else invalid.push(e);
    }
    return { reserved: new ReservedAddresses(cidrs), invalid };
  }

  static readonly none = new ReservedAddresses([]);

  get isEmpty(): boolean {
    return this.cidrs.length === 0;
  }

  matchesIp(ip: IPAddress): boolean {
    return this.cidrs.some((c) => cidrContainsIp(c, ip));
  }

  /** Every address of `cidr` is reserved (by one reservation covering it). */
  matchesWholeCidr(cidr: Cidr): boolean {
    if (this.cidrs.some((c) => cidrContains(c, cidr))) return true;
    // Several smaller reservations may tile the block together.
    const parts = this.cidrs.filter((c) => cidrsOverlap(c, cidr));
    if (parts.length < 2) return false;
    const blockEnd = cidrLast(cidr);
    const ranges = parts
      .map((c) => [bigMax(c.network, cidr.network), bigMin(cidrLast(c), blockEnd)] as const)
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    let next = cidr.network;
    for (const [s, e] of ranges) {
      if (s > next) return false;
      if (e + 1n > next) next = e + 1n;
    }
    return next > blockEnd;
  }

  /** Some address of `cidr` is reserved. */
  matchesSome(cidr: Cidr): boolean {
    return this.cidrs.some((c) => cidrsOverlap(c, cidr));
  }
}

function bigMax(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

function bigMin(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
