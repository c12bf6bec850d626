/**
 * Records as upstream Calico writes them, byte for byte, for tests that check the codecs and the
 * stores against upstream's shape (the IPAM store's contract in @calico-ts/ipam, the Kubernetes
 * key mapping here).
 */

/** A block as upstream writes one: two allocations, a nanosecond sequence number beyond 2^53. */
export function upstreamBlockJson(cidr: string, node: string): string {
  return (
    `{"cidr":"${cidr}","affinity":"host:${node}","affinity_claim_time":"2026-01-02T03:04:05Z",` +
    '"allocations":[0,null,1' +
    ',null'.repeat(61) +
    '],"unallocated":[' +
    Array.from({ length: 62 }, (_, i) => (i === 0 ? 1 : i + 2)).join(',') +
    '],"attributes":[{"handle_id":"k8s-pod-network.abc","secondary":{"namespace":"default","node":"' +
    node +
    '","pod":"web-1","timestamp":"2026-01-02 03:04:05.123 +0000 UTC"}},' +
    '{"handle_id":"vxlan-tunnel-addr-' +
    node +
    '","secondary":{"node":"' +
    node +
    '","type":"vxlanTunnelAddress"}}],' +
    '"sequenceNumber":1767323045123456789,"sequenceNumberForAllocation":{"0":1767323045123456789,"2":1767323045123456790},' +
    '"deleted":false}'
  );
}
