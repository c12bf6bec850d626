/**
 * Calico protocol names as nftables knows them: what `meta l4proto` takes, and which transport
 * header a port match reads. Names and numbers only; the matches are built with
 * `@calico-ts/nftables`' builders.
 */

/** Protocol names as nft's `meta l4proto` knows them (`icmpv6` is `ipv6-icmp` there). */
export function l4protoExpr(p: string | number): string | number {
  if (typeof p === 'number') return p;
  if (p === 'icmpv6') return 'ipv6-icmp';
  return p;
}

/** The transport header to read ports from: the protocol's own when known, else `th`. */
export function portProtocol(p: string | number | undefined): string {
  if (p === 'tcp' || p === 6) return 'tcp';
  if (p === 'udp' || p === 17) return 'udp';
  if (p === 'sctp' || p === 132) return 'sctp';
  return 'th';
}
