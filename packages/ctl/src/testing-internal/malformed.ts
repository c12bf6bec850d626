/**
 * Thirty documents calicoctl must refuse, each with the field its error has to name. Used by the
 * unit tests (memory store) and the integration tests (real etcd, bytes compared before/after).
 */
export interface MalformedCase {
  what: string;
  doc: string;
  /** Text the error line must contain: the field path, or the decoding position. */
  names: string;
}

const v3 = (kind: string, meta: string, spec: string) =>
  `apiVersion: projectcalico.org/v3\nkind: ${kind}\nmetadata: ${meta}\nspec: ${spec}\n`;

export const MALFORMED: readonly MalformedCase[] = [
  {
    what: 'IPPool block size out of range',
    doc: v3('IPPool', '{name: p}', '{cidr: 198.19.0.0/16, blockSize: 99}'),
    names: 'spec.blockSize:',
  },
  {
    what: 'IPPool CIDR with host bits',
    doc: v3('IPPool', '{name: p}', '{cidr: 198.19.0.1/16}'),
    names: 'spec.cidr:',
  },
  { what: 'IPPool without CIDR', doc: v3('IPPool', '{name: p}', '{natOutgoing: true}'), names: 'spec.cidr:' },
  {
    what: 'IPPool unknown IPIP mode',
    doc: v3('IPPool', '{name: p}', '{cidr: 198.19.0.0/16, ipipMode: Sometimes}'),
    names: 'spec.ipipMode:',
  },
  {
    what: 'IPPool IPIP and VXLAN together',
    doc: v3('IPPool', '{name: p}', '{cidr: 198.19.0.0/16, ipipMode: Always, vxlanMode: Always}'),
    names: 'Mode:',
  },
  {
    what: 'IPPool unknown field',
    doc: v3('IPPool', '{name: p}', '{cidr: 198.19.0.0/16, natOutgoin: true}'),
    names: 'spec.natOutgoin:',
  },
  {
    what: 'upper-case name',
    doc: v3('IPPool', '{name: Pool_A}', '{cidr: 198.19.0.0/16}'),
    names: 'metadata.name:',
  },
  {
    what: 'no metadata',
    doc: 'apiVersion: projectcalico.org/v3\nkind: IPPool\nspec: {cidr: 198.19.0.0/16}\n',
    names: 'metadata:',
  },
  {
    what: 'no kind',
    doc: 'apiVersion: projectcalico.org/v3\nmetadata: {name: p}\nspec: {}\n',
    names: 'kind:',
  },
  { what: 'unknown kind', doc: v3('IPPoool', '{name: p}', '{}'), names: 'kind:' },
  {
    what: 'old apiVersion',
    doc: 'apiVersion: projectcalico.org/v2\nkind: IPPool\nmetadata: {name: p}\nspec: {cidr: 198.19.0.0/16}\n',
    names: 'apiVersion:',
  },
  {
    what: 'rule without action',
    doc: v3('NetworkPolicy', '{name: np, namespace: prod}', '{ingress: [{protocol: TCP}]}'),
    names: 'spec.ingress[0].action:',
  },
  {
    what: 'broken selector',
    doc: v3('NetworkPolicy', '{name: np, namespace: prod}', '{selector: "app == "}'),
    names: 'spec.selector:',
  },
  {
    what: 'unknown rule action',
    doc: v3('GlobalNetworkPolicy', '{name: g}', '{egress: [{action: Maybe}]}'),
    names: 'spec.egress[0].action:',
  },
  {
    what: 'ICMP match without protocol',
    doc: v3('GlobalNetworkPolicy', '{name: g}', '{ingress: [{action: Allow, icmp: {type: 8}}]}'),
    names: 'spec.ingress[0].icmp',
  },
  {
    what: 'ports with ICMP',
    doc: v3(
      'GlobalNetworkPolicy',
      '{name: g}',
      '{ingress: [{action: Allow, protocol: ICMP, destination: {ports: [80]}}]}',
    ),
    names: 'spec.ingress[0].destination.ports',
  },
  {
    what: 'BGP peer IP not an IP',
    doc: v3('BGPPeer', '{name: b}', '{peerIP: 198.18.0.300, asNumber: 64512}'),
    names: 'spec.peerIP:',
  },
  {
    what: 'BGP peer node and nodeSelector',
    doc: v3('BGPPeer', '{name: b}', '{node: n1, nodeSelector: all(), peerIP: 198.18.0.3, asNumber: 64512}'),
    names: 'spec.node',
  },
  {
    what: 'AS number not a number',
    doc: v3('BGPConfiguration', '{name: default}', '{asNumber: lots}'),
    names: 'spec.asNumber:',
  },
  {
    what: 'FelixConfiguration misspelt field',
    doc: v3('FelixConfiguration', '{name: default}', '{logSeverityScrean: Info}'),
    names: 'spec.logSeverityScrean:',
  },
  {
    what: 'HostEndpoint without node',
    doc: v3('HostEndpoint', '{name: h}', '{interfaceName: eth0}'),
    names: 'spec.node:',
  },
  {
    what: 'HostEndpoint interface name too long',
    doc: v3('HostEndpoint', '{name: h}', '{node: n1, interfaceName: a-very-long-interface-name}'),
    names: 'spec.interfaceName:',
  },
  {
    what: 'GlobalNetworkSet bad CIDR',
    doc: v3('GlobalNetworkSet', '{name: g}', '{nets: [198.18.0.0/33]}'),
    names: 'spec.nets[0]:',
  },
  {
    what: 'NetworkSet bad label value',
    doc: v3('NetworkSet', '{name: s, namespace: prod, labels: {a: "has space"}}', '{nets: [198.18.0.0/24]}'),
    names: 'metadata.labels',
  },
  {
    what: 'Tier unknown default action',
    doc: v3('Tier', '{name: t}', '{order: 5, defaultAction: Drop}'),
    names: 'spec.defaultAction:',
  },
  {
    what: 'IPReservation bad CIDR',
    doc: v3('IPReservation', '{name: r}', '{reservedCIDRs: [not-a-cidr]}'),
    names: 'spec.reservedCIDRs[0]:',
  },
  {
    what: 'Node bad BGP address',
    doc: v3('Node', '{name: n1}', '{bgp: {ipv4Address: 198.18.0.1/99}}'),
    names: 'spec.bgp.ipv4Address:',
  },
  { what: 'spec not a mapping', doc: v3('IPPool', '{name: p}', '5'), names: 'spec:' },
  {
    what: 'namespace on a cluster kind',
    doc: v3('IPPool', '{name: p, namespace: prod}', '{cidr: 198.19.0.0/16}'),
    names: 'metadata.namespace:',
  },
  {
    what: 'YAML syntax error',
    doc: 'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p\nspec: {}\n',
    names: 'stdin:',
  },
  {
    what: 'v1 ipPool with a bad CIDR',
    doc: 'apiVersion: v1\nkind: ipPool\nmetadata:\n  cidr: 192.168.0.0/99\nspec:\n  nat-outgoing: true\n',
    names: 'cidr',
  },
  {
    what: 'a good document before a bad one',
    doc: `${v3('IPPool', '{name: good}', '{cidr: 198.19.0.0/16}')}---\n${v3('IPPool', '{name: bad}', '{cidr: 198.18.0.0/16, blockSize: 12}')}`,
    names: 'document 2 of stdin (IPPool "bad"): spec.blockSize:',
  },
];
