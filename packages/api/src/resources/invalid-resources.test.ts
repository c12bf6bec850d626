import { describe, expect, it } from 'vitest';
import type { FieldError } from '../errors.js';
import { decodeDocuments, storeStringScalars, validateResource } from './index.js';

const SUBDOMAIN =
  "must be a lower-case DNS-1123 subdomain: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters";
/** Why a selector is bad is the selector parser's wording; only the prefix is ours. */
const SELECTOR_PROBLEM = expect.stringMatching(/^is not a valid selector: \S/) as unknown as string;
const PORTS_NEED_PROTOCOL = "needs the rule's protocol to be TCP, UDP or SCTP (only they have ports)";

/** [title, YAML document (apiVersion is prepended unless the body sets it), every expected error]. */
const cases: Array<[string, string, FieldError[]]> = [
  // ---- envelope --------------------------------------------------------------------------------
  ['document is not an object', '- just\n- a list of strings\n', []],
  [
    'wrong apiVersion, unknown kind, no metadata',
    'apiVersion: projectcalico.org/v1\nkind: IpPool\n',
    [
      { path: 'apiVersion', rule: 'must be projectcalico.org/v3, not "projectcalico.org/v1"' },
      { path: 'kind', rule: 'is not a known projectcalico.org/v3 kind: "IpPool"; did you mean "IPPool"?' },
      { path: 'metadata', rule: 'is required' },
    ],
  ],
  [
    'missing apiVersion and kind',
    '# no apiVersion\nmetadata: {name: x}\n',
    [
      { path: 'apiVersion', rule: 'is required (projectcalico.org/v3)' },
      { path: 'kind', rule: 'is required' },
    ],
  ],
  [
    'unknown top-level field, missing name',
    'kind: Tier\nmetadata: {labels: {a: b}}\nstatus: {}\nspecs: {}\n',
    [
      { path: 'metadata.name', rule: 'is required' },
      { path: 'specs', rule: 'is not a known field; did you mean "spec"?' },
    ],
  ],
  [
    'staged Delete with more than a tier, unknown staged action',
    'kind: StagedNetworkPolicy\nmetadata: {name: p, namespace: prod}\nspec: {stagedAction: Delete, tier: default, selector: all(), order: 10}\n',
    [
      {
        path: 'spec.order',
        rule: 'must not be set when stagedAction is Delete (only stagedAction and tier may be)',
      },
      {
        path: 'spec.selector',
        rule: 'must not be set when stagedAction is Delete (only stagedAction and tier may be)',
      },
    ],
  ],
  [
    'CalicoNodeStatus without a node or a period, a class twice',
    'kind: CalicoNodeStatus\nmetadata: {name: s}\nspec: {classes: [BGP, BGP]}\n',
    [
      { path: 'spec.classes[1]', rule: 'lists BGP more than once' },
      { path: 'spec.node', rule: 'must name the node that reports' },
      { path: 'spec.updatePeriodSeconds', rule: 'is required: seconds between reports, 0 (never) to 86400' },
    ],
  ],
  [
    'CalicoNodeStatus with no classes and a period over a day',
    'kind: CalicoNodeStatus\nmetadata: {name: s}\nspec: {node: n1, updatePeriodSeconds: 86401}\n',
    [
      { path: 'spec.classes', rule: 'is required: any of Agent, BGP, Routes' },
      { path: 'spec.updatePeriodSeconds', rule: 'must be at most 86400' },
    ],
  ],
  [
    'namespace on a cluster-scoped kind, bad name',
    'kind: GlobalNetworkSet\nmetadata: {name: My.Set, namespace: default}\nspec: {nets: [10.0.0.0/8]}\n',
    [
      { path: 'metadata.name', rule: SUBDOMAIN },
      { path: 'metadata.namespace', rule: 'must not be set: GlobalNetworkSet is not namespaced' },
    ],
  ],
  [
    'namespaced kind without namespace, bad labels',
    'kind: NetworkSet\nmetadata:\n  name: ns1\n  labels: {"-bad": ok, good: "not ok!", projectcalico.org/namespace: x}\n',
    [
      {
        path: 'metadata.labels.good',
        rule: "label value must be empty or consist of letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
      },
      {
        path: 'metadata.labels["-bad"]',
        rule: "label key must consist of letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
      },
      { path: 'metadata.labels["projectcalico.org/namespace"]', rule: 'is reserved: Calico sets it itself' },
      { path: 'metadata.namespace', rule: 'is required: NetworkSet is a namespaced kind' },
    ],
  ],
  [
    'wrong types in metadata',
    'kind: Profile\nmetadata: {name: p, labels: [a], generation: 1.5}\nspec: 7\n',
    [
      { path: 'metadata.generation', rule: 'must be a whole number' },
      { path: 'metadata.labels', rule: 'must be an object (a mapping of fields)' },
      { path: 'spec', rule: 'must be an object (a mapping of fields)' },
    ],
  ],

  // ---- IPPool ------------------------------------------------------------------------------------
  [
    'IPPool: not strictly masked, block size out of range, both encapsulations',
    'kind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.1.2.0/16, blockSize: 19, ipipMode: Always, vxlanMode: CrossSubnet}\n',
    [
      { path: 'spec.blockSize', rule: 'must be between 20 and 32 for IPv4' },
      { path: 'spec.cidr', rule: 'is not strictly masked: host bits are set (did you mean 10.1.0.0/16?)' },
      { path: 'spec.ipipMode', rule: 'cannot be enabled together with vxlanMode; choose one encapsulation' },
    ],
  ],
  [
    'IPPool: IPv6 with IPIP, link-local, bad block size',
    'kind: IPPool\nmetadata: {name: p6}\nspec: {cidr: "fe80::/64", ipipMode: CrossSubnet, blockSize: 112}\n',
    [
      { path: 'spec.blockSize', rule: 'must be between 116 and 128 for IPv6' },
      { path: 'spec.cidr', rule: 'overlaps the IPv6 link-local range fe80::/10' },
      { path: 'spec.ipipMode', rule: 'must be Never for an IPv6 pool (IPIP carries IPv4 only)' },
    ],
  ],
  [
    'IPPool: IPv4 link-local, global() node selector',
    'kind: IPPool\nmetadata: {name: ll}\nspec: {cidr: 169.254.0.0/16, nodeSelector: global()}\n',
    [
      { path: 'spec.cidr', rule: 'overlaps the IPv4 link-local range 169.254.0.0/16' },
      {
        path: 'spec.nodeSelector',
        rule: "may not use global(); it is only allowed in a rule's namespaceSelector",
      },
    ],
  ],
  [
    'IPPool: pool smaller than its block',
    'kind: IPPool\nmetadata: {name: tiny}\nspec: {cidr: 10.0.0.0/28}\n',
    [
      {
        path: 'spec.cidr',
        rule: 'is smaller than one block: prefix /28 is longer than the block size 26; use a larger pool or a larger blockSize',
      },
    ],
  ],
  [
    'IPPool: missing cidr, bad enums, unknown field',
    'kind: IPPool\nmetadata: {name: p}\nspec: {ipipMode: always, assignmentMode: Auto, natOutgoing: "yes", nat-outgoing: true}\n',
    [
      { path: 'spec.assignmentMode', rule: 'must be one of: Automatic, Manual' },
      { path: 'spec.cidr', rule: 'is required' },
      { path: 'spec.ipipMode', rule: 'must be one of: Never, Always, CrossSubnet' },
      { path: 'spec.natOutgoing', rule: 'must be true or false' },
      { path: 'spec["nat-outgoing"]', rule: 'is not a known field; did you mean "natOutgoing"?' },
    ],
  ],
  [
    'IPPool: garbage CIDR',
    'kind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.0.0.0/33}\n',
    [{ path: 'spec.cidr', rule: 'must be a valid CIDR such as 10.0.0.0/16 or fd00::/48' }],
  ],
  [
    'IPPool: LoadBalancer pool mixed with other uses and encapsulation',
    'kind: IPPool\nmetadata: {name: lb}\nspec: {cidr: 198.51.100.0/24, allowedUses: [LoadBalancer, Workload], vxlanMode: Always, nodeSelector: "role == \'lb\'"}\n',
    [
      { path: 'spec.allowedUses', rule: 'cannot combine LoadBalancer with Workload' },
      { path: 'spec.nodeSelector', rule: 'must be all() for a LoadBalancer pool' },
      { path: 'spec.vxlanMode', rule: 'must be Never for a LoadBalancer pool' },
    ],
  ],
  [
    'IPPool: bad selector and unknown use',
    'kind: IPPool\nmetadata: {name: p}\nspec: {cidr: 10.0.0.0/16, nodeSelector: "a ==", allowedUses: [Workloads]}\n',
    [
      { path: 'spec.allowedUses[0]', rule: 'must be one of: Workload, Tunnel, LoadBalancer' },
      { path: 'spec.nodeSelector', rule: SELECTOR_PROBLEM },
    ],
  ],

  // ---- IPReservation -----------------------------------------------------------------------------
  [
    'IPReservation: bad CIDRs',
    'kind: IPReservation\nmetadata: {name: r}\nspec: {reservedCIDRs: [10.0.0.0/8, nope, 7]}\n',
    [
      { path: 'spec.reservedCIDRs[1]', rule: 'must be a valid CIDR (such as 10.0.0.0/16) or IP address' },
      // A number in a string field is read as its text ("7"), as upstream reads it, then refused.
      { path: 'spec.reservedCIDRs[2]', rule: 'must be a valid CIDR (such as 10.0.0.0/16) or IP address' },
    ],
  ],

  // ---- policy rules --------------------------------------------------------------------------------
  [
    'GNP: icmp without protocol, ports without port protocol, notNets everything, mixed families',
    `kind: GlobalNetworkPolicy
metadata: {name: bad-rules}
spec:
  ingress:
  - action: Deny
    icmp: {type: 8}
    source: {nets: [10.0.0.0/8], notNets: ["::/0"]}
    destination: {ports: [80, "8000:9000"]}
`,
    [
      { path: 'spec.ingress[0].destination.ports', rule: PORTS_NEED_PROTOCOL },
      { path: 'spec.ingress[0].icmp', rule: "needs the rule's protocol to be ICMP or ICMPv6" },
      {
        path: 'spec.ingress[0].source.notNets',
        rule: 'mixes IPv4 and IPv6: all CIDRs in one rule must be of the same IP version',
      },
      {
        path: 'spec.ingress[0].source.notNets[0]',
        rule: 'must not be ::/0: excluding every address would make the rule match nothing',
      },
    ],
  ],
  [
    'NP: ICMP with ipVersion 6, ICMP code without type, bad action',
    `kind: NetworkPolicy
metadata: {name: p, namespace: n}
spec:
  egress:
  - action: allow
    protocol: ICMP
    ipVersion: 6
    icmp: {code: 3}
    notICMP: {type: 300}
`,
    [
      { path: 'spec.egress[0].action', rule: 'must be one of: Allow, Deny, Log, Pass' },
      {
        path: 'spec.egress[0].icmp.code',
        rule: 'needs icmp.type to be set too (a code alone cannot be matched)',
      },
      { path: 'spec.egress[0].ipVersion', rule: 'must be 4 when the protocol is ICMP' },
      { path: 'spec.egress[0].notICMP.type', rule: 'must be a whole number between 0 and 254' },
    ],
  ],
  [
    'NP: ICMPv6 with ipVersion 4, nets of the wrong version',
    `kind: NetworkPolicy
metadata: {name: p, namespace: n}
spec:
  ingress:
  - action: Allow
    protocol: ICMPv6
    ipVersion: 4
    source: {nets: ["fd00::/8"]}
`,
    [
      { path: 'spec.ingress[0].ipVersion', rule: 'must be 6 when the protocol is ICMPv6' },
      {
        path: 'spec.ingress[0].source.nets',
        rule: "contains CIDRs of another IP version than the rule's ipVersion 4",
      },
    ],
  ],
  [
    'NP: http on a Deny rule with UDP, in egress too',
    `kind: NetworkPolicy
metadata: {name: p, namespace: n}
spec:
  ingress:
  - action: Deny
    protocol: UDP
    http: {methods: [GET, GET], paths: [{exact: /a, prefix: /b}, {exact: "no-slash"}]}
  egress:
  - action: Allow
    http: {paths: [{}]}
`,
    [
      { path: 'spec.egress[0].http', rule: 'is not allowed in egress rules' },
      { path: 'spec.egress[0].http.paths[0]', rule: 'must set exact or prefix' },
      { path: 'spec.ingress[0].http', rule: 'is only allowed in Allow rules' },
      { path: 'spec.ingress[0].http.methods', rule: 'must not list a method twice' },
      { path: 'spec.ingress[0].http.paths[0]', rule: 'must set either exact or prefix, not both' },
      {
        path: 'spec.ingress[0].http.paths[1].exact',
        rule: "must start with '/' and contain no '?', '#' or space",
      },
      { path: 'spec.ingress[0].protocol', rule: 'must be TCP (or unset) in a rule with http match criteria' },
    ],
  ],
  [
    'NP: bad protocol, ports and unmasked nets',
    `kind: NetworkPolicy
metadata: {name: p, namespace: n}
spec:
  ingress:
  - action: Allow
    protocol: tcp
    notProtocol: 256
    source: {nets: [10.0.0.1/8]}
    destination: {ports: [0, "90:80", "bad port!"]}
`,
    [
      {
        path: 'spec.ingress[0].destination.ports[0]',
        rule: 'must be a port number between 1 and 65535, a range "min:max", or a port name',
      },
      {
        path: 'spec.ingress[0].destination.ports[1]',
        rule: 'is not a valid port range: 90 is greater than 80',
      },
      {
        path: 'spec.ingress[0].destination.ports[2]',
        rule: 'must be a port number between 1 and 65535, a range "min:max", or a port name',
      },
      {
        path: 'spec.ingress[0].notProtocol',
        rule: 'must be one of TCP, UDP, ICMP, ICMPv6, SCTP, UDPLite or a protocol number between 1 and 255',
      },
      {
        path: 'spec.ingress[0].protocol',
        rule: 'must be one of TCP, UDP, ICMP, ICMPv6, SCTP, UDPLite or a protocol number between 1 and 255',
      },
      {
        path: 'spec.ingress[0].source.nets[0]',
        rule: 'must not have host bits set (the address must be the network address)',
      },
    ],
  ],
  [
    'NP: services combined with selectors and ports, wrong side',
    `kind: NetworkPolicy
metadata: {name: p, namespace: n}
spec:
  egress:
  - action: Allow
    protocol: TCP
    source: {services: {name: s}}
    destination: {services: {namespace: other}, selector: a == 'b', nets: [10.0.0.0/8], ports: [443]}
`,
    [
      { path: 'spec.egress[0].destination.nets', rule: 'cannot be combined with destination.services' },
      {
        path: 'spec.egress[0].destination.ports',
        rule: "cannot be combined with destination.services (the service's own ports are used)",
      },
      { path: 'spec.egress[0].destination.selector', rule: 'cannot be combined with destination.services' },
      { path: 'spec.egress[0].destination.services.name', rule: 'is required' },
      {
        path: 'spec.egress[0].source.services',
        rule: 'is not allowed in egress rules; match services in destination',
      },
    ],
  ],
  [
    'GNP: service match without namespace, service in ingress destination',
    `kind: GlobalNetworkPolicy
metadata: {name: svc}
spec:
  ingress:
  - action: Allow
    source: {services: {name: frontend}}
    destination: {services: {name: db, namespace: prod}}
`,
    [
      {
        path: 'spec.ingress[0].destination.services',
        rule: 'is not allowed in ingress rules; match services in source',
      },
      {
        path: 'spec.ingress[0].source.services.namespace',
        rule: 'is required in a GlobalNetworkPolicy (service names are per namespace)',
      },
    ],
  ],
  [
    'GNP: global() misuse in selectors',
    `kind: GlobalNetworkPolicy
metadata: {name: g}
spec:
  selector: global()
  ingress:
  - action: Allow
    source: {selector: global(), namespaceSelector: global() && a == 'b'}
`,
    [
      {
        path: 'spec.ingress[0].source.namespaceSelector',
        rule: 'may not combine global() with other expressions',
      },
      {
        path: 'spec.ingress[0].source.selector',
        rule: "may not use global(); it is only allowed in a rule's namespaceSelector",
      },
      {
        path: 'spec.selector',
        rule: "may not use global(); it is only allowed in a rule's namespaceSelector",
      },
    ],
  ],
  [
    'GNP: preDNAT with doNotTrack, egress rules, Egress type, no applyOnForward',
    `kind: GlobalNetworkPolicy
metadata: {name: pd}
spec:
  preDNAT: true
  doNotTrack: true
  types: [Ingress, Egress, Ingress]
  egress: [{action: Allow}]
`,
    [
      { path: 'spec.applyOnForward', rule: 'must be true when doNotTrack or preDNAT is true' },
      { path: 'spec.egress', rule: 'must be empty in a preDNAT policy' },
      { path: 'spec.preDNAT', rule: 'cannot be true together with doNotTrack' },
      { path: 'spec.types[1]', rule: 'cannot be Egress in a preDNAT policy' },
      { path: 'spec.types[2]', rule: 'lists Ingress more than once' },
    ],
  ],
  [
    'GNP: name with two dots, bad type, unknown NP-only field mistake',
    'kind: GlobalNetworkPolicy\nmetadata: {name: a.b.c}\nspec: {types: [ingress], order: high, namespaceselector: all()}\n',
    [
      {
        path: 'metadata.name',
        rule: "must be a lower-case DNS-1123 label (letters, digits and '-'), optionally with one '.' (e.g. allow-dns or security.allow-dns)",
      },
      { path: 'spec.namespaceselector', rule: 'is not a known field; did you mean "namespaceSelector"?' },
      { path: 'spec.order', rule: 'must be a number' },
      { path: 'spec.types[0]', rule: 'must be one of: Ingress, Egress' },
    ],
  ],
  [
    'NP: GNP-only fields and bad tier name',
    'kind: NetworkPolicy\nmetadata: {name: knp.default.x.y, namespace: n}\nspec: {tier: My.Tier, doNotTrack: true, namespaceSelector: all()}\n',
    [
      { path: 'spec.doNotTrack', rule: 'is not a known field' },
      { path: 'spec.namespaceSelector', rule: 'is not a known field' },
      { path: 'spec.tier', rule: "must name a tier: a lower-case DNS-1123 label (letters, digits and '-')" },
    ],
  ],
  [
    'NP: bad name and rule annotation key',
    `kind: NetworkPolicy
metadata: {name: a.b.c, namespace: Prod}
spec:
  ingress: [{action: Log, metadata: {annotations: {"bad key": x}}, ipVersion: 5}]
`,
    [
      {
        path: 'metadata.name',
        rule: "must be a lower-case DNS-1123 label (letters, digits and '-'), optionally with one '.' (e.g. web or tier1.web)",
      },
      {
        path: 'metadata.namespace',
        rule: "must be a lower-case DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters",
      },
      {
        path: 'spec.ingress[0].ipVersion',
        rule: 'must be 4 or 6',
      },
      {
        path: 'spec.ingress[0].metadata.annotations["bad key"]',
        rule: "annotation key must consist of letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
      },
    ],
  ],
  [
    'Profile: rule errors are checked as in policies',
    'kind: Profile\nmetadata: {name: prof}\nspec: {ingress: [{action: Allow, source: {ports: [22]}}], labelsToApply: {ok: [x]}}\n',
    [
      { path: 'spec.ingress[0].source.ports', rule: PORTS_NEED_PROTOCOL },
      { path: 'spec.labelsToApply.ok', rule: 'must be a string' },
    ],
  ],

  // ---- Tier ---------------------------------------------------------------------------------------
  [
    'Tier: dotted name, bad action',
    'kind: Tier\nmetadata: {name: my.tier}\nspec: {defaultAction: Allow, order: "1"}\n',
    [
      {
        path: 'metadata.name',
        rule: "must be a lower-case DNS-1123 label: letters, digits and '-', starting and ending with a letter or digit, no '.'",
      },
      { path: 'spec.defaultAction', rule: 'must be one of: Deny, Pass' },
      { path: 'spec.order', rule: 'must be a number' },
    ],
  ],
  [
    'Tier: the default tier with a foreign order and action',
    'kind: Tier\nmetadata: {name: default}\nspec: {defaultAction: Pass, order: 5}\n',
    [
      { path: 'spec.defaultAction', rule: 'must be Deny for the default tier' },
      { path: 'spec.order', rule: 'must be 1000000 for the default tier' },
    ],
  ],

  // ---- BGP ---------------------------------------------------------------------------------------
  [
    'BGPPeer: node with nodeSelector, peerIP with peerSelector and asNumber',
    'kind: BGPPeer\nmetadata: {name: peer}\nspec: {node: n1, nodeSelector: all(), peerIP: 10.0.0.1, peerSelector: has(rr), asNumber: 64512}\n',
    [
      {
        path: 'spec.asNumber',
        rule: "must be empty when peerSelector is set (each peer node's AS number is used)",
      },
      { path: 'spec.nodeSelector', rule: 'cannot be set together with node; use one or the other' },
      { path: 'spec.peerSelector', rule: 'cannot be set together with peerIP; use one or the other' },
    ],
  ],
  [
    'BGPPeer: malformed peerIP, AS number, durations, reachableBy',
    'kind: BGPPeer\nmetadata: {name: peer}\nspec: {peerIP: "fd00::1:179", asNumber: 4294967296, maxRestartTime: 2 minutes, reachableBy: 10.0.0.1, keepOriginalNextHop: true, nextHopMode: Keep}\n',
    [
      {
        path: 'spec.asNumber',
        rule: 'must be an AS number: 0-4294967295, or "high.low" with each part 0-65535',
      },
      {
        path: 'spec.keepOriginalNextHop',
        rule: 'cannot be true when nextHopMode is set (it is deprecated; use nextHopMode)',
      },
      { path: 'spec.maxRestartTime', rule: 'must be a duration such as "90s", "5m" or "1h30m"' },
      { path: 'spec.reachableBy', rule: 'must be of the same IP version as peerIP' },
    ],
  ],
  [
    'BGPPeer: IPv6 peer with port, localWorkloadSelector conflicts',
    'kind: BGPPeer\nmetadata: {name: peer}\nspec: {peerIP: "[fd00::1]:70000", localWorkloadSelector: app == \'bgp\', sourceAddress: NodeIP}\n',
    [
      { path: 'spec.asNumber', rule: 'is required when localWorkloadSelector is set' },
      {
        path: 'spec.peerIP',
        rule: 'must be an IP address, optionally with a port: <IPv4>:<port> or [<IPv6>]:<port>',
      },
      { path: 'spec.peerIP', rule: 'must be empty when localWorkloadSelector is set' },
      { path: 'spec.sourceAddress', rule: 'must be one of: UseNodeIP, None' },
    ],
  ],
  [
    'BGPConfiguration: default-only fields on a node config, bad communities, mesh options with mesh off',
    `kind: BGPConfiguration
metadata: {name: node.node-1}
spec:
  asNumber: 65000
  nodeToNodeMeshEnabled: false
  nodeMeshMaxRestartTime: 120s
  communities: [{name: c1, value: "70000:1"}]
  listenPort: 0
`,
    [
      { path: 'spec.asNumber', rule: 'can only be set in the BGPConfiguration named "default"' },
      {
        path: 'spec.communities',
        rule: 'are defined but not used: no spec.prefixAdvertisements entry refers to them',
      },
      {
        path: 'spec.communities[0].value',
        rule: 'must be a BGP community "aa:nn" (16-bit numbers) or "aa:nn:mm" (32-bit numbers)',
      },
      { path: 'spec.listenPort', rule: 'must be a whole number between 1 and 65535' },
      { path: 'spec.nodeMeshMaxRestartTime', rule: 'cannot be set when nodeToNodeMeshEnabled is false' },
      { path: 'spec.nodeToNodeMeshEnabled', rule: 'can only be set in the BGPConfiguration named "default"' },
    ],
  ],
  [
    'BGPConfiguration: undefined community in an advertisement, bad ignored interface',
    `kind: BGPConfiguration
metadata: {name: default}
spec:
  prefixAdvertisements: [{cidr: 10.0.0.0/8, communities: [nosuch]}]
  ignoredInterfaces: ["*"]
  logSeverityScreen: info
`,
    [
      {
        path: 'spec.ignoredInterfaces[0]',
        rule: "must be an interface name or pattern of 1-15 characters (letters, digits, '_', '.', '-', '*'), not just '*'",
      },
      { path: 'spec.logSeverityScreen', rule: 'must be one of: Trace, Debug, Info, Warning, Error, Fatal' },
      {
        path: 'spec.prefixAdvertisements[0].communities[0]',
        rule: 'must be a community value ("aa:nn" or "aa:nn:mm") or the name of an entry in spec.communities',
      },
    ],
  ],
  [
    'BGPFilter: cidr without operator, operator without cidr, wrong family, operations on Reject',
    `kind: BGPFilter
metadata: {name: f}
spec:
  exportV4:
  - {action: Accept, cidr: 10.0.0.0/8}
  - {action: Reject, matchOperator: In, prefixLength: {min: 8}, operations: [{setPriority: {value: 5}}]}
  importV6:
  - {action: Accept, cidr: 10.0.0.0/8, matchOperator: Equal, source: RemotePeers}
  - {cidr: "fd00::/8", matchOperator: In}
`,
    [
      { path: 'spec.exportV4[0].matchOperator', rule: 'is required when cidr is set' },
      { path: 'spec.exportV4[1].cidr', rule: 'is required when matchOperator is set' },
      { path: 'spec.exportV4[1].operations', rule: 'may only be used with action Accept' },
      { path: 'spec.exportV4[1].prefixLength', rule: 'needs cidr to be set' },
      { path: 'spec.importV6[0].cidr', rule: 'must be a valid IPv6 CIDR' },
      {
        path: 'spec.importV6[0].source',
        rule: 'does not apply to import rules (imported routes always come from peers)',
      },
      { path: 'spec.importV6[1].action', rule: 'is required' },
    ],
  ],

  // ---- FelixConfiguration -------------------------------------------------------------------------
  [
    'FelixConfiguration: unknown keys rejected with hints, bad values',
    `kind: FelixConfiguration
metadata: {name: default}
spec:
  ipv6support: false
  notAFelixField: 1
  logSeverityScreen: Verbose
  reportingInterval: 30
  vxlanVNI: -1
  nodeSelector: all()
`,
    [
      { path: 'spec.ipv6support', rule: 'is not a known field; did you mean "ipv6Support"?' },
      { path: 'spec.logSeverityScreen', rule: 'must be one of: Trace, Debug, Info, Warning, Error, Fatal' },
      {
        path: 'spec.nodeSelector',
        rule: "must not be set on the 'default' or a per-node ('node.<name>') FelixConfiguration",
      },
      { path: 'spec.notAFelixField', rule: 'is not a known field' },
      { path: 'spec.reportingInterval', rule: 'must be a duration such as "90s", "5m" or "1h30m"' },
      { path: 'spec.vxlanVNI', rule: 'must be a whole number between 0 and 16777215' },
    ],
  ],
  [
    'FelixConfiguration: addresses, route tables, node ports',
    `kind: FelixConfiguration
metadata: {name: node.node-1}
spec:
  natOutgoingAddress: "fd00::1"
  deviceRouteSourceAddressIPv6: 10.0.0.1
  routeTableRange: {min: 0, max: 300}
  routeTableRanges: [{min: 5, max: 1}]
  kubeNodePortRanges: [http, 1, 2, 3, 4, 5, 6]
  externalNodesList: ["fd00::/8"]
  failsafeInboundHostPorts: [{protocol: icmp, port: 22}]
`,
    [
      { path: 'spec.deviceRouteSourceAddressIPv6', rule: 'must be a valid IPv6 address' },
      { path: 'spec.externalNodesList[0]', rule: 'must be an IPv4 CIDR (IPv6 is not supported here)' },
      { path: 'spec.failsafeInboundHostPorts[0].protocol', rule: 'must be TCP, UDP or SCTP' },
      { path: 'spec.kubeNodePortRanges[0]', rule: 'must be a port number or range, not a port name' },
      { path: 'spec.natOutgoingAddress', rule: 'must be a valid IPv4 address' },
      {
        path: 'spec.routeTableRange',
        rule: 'cannot be set together with routeTableRanges (it is deprecated; use routeTableRanges)',
      },
      {
        path: 'spec.routeTableRange',
        rule: 'must be a range of route table indices within 1..250 with min <= max',
      },
      { path: 'spec.routeTableRanges[0]', rule: 'min must not be greater than max' },
    ],
  ],

  // ---- endpoints, nodes, sets -----------------------------------------------------------------------
  [
    'HostEndpoint: no node, no interface or IPs, port without protocol support',
    'kind: HostEndpoint\nmetadata: {name: h}\nspec: {ports: [{name: dns, protocol: ICMP, port: 53}], profiles: [Bad]}\n',
    [
      { path: 'spec', rule: 'must set interfaceName or expectedIPs (or both)' },
      { path: 'spec.node', rule: 'is required' },
      { path: 'spec.ports[0].protocol', rule: 'must be TCP, UDP or SCTP (only they have ports)' },
      { path: 'spec.profiles[0]', rule: SUBDOMAIN },
    ],
  ],
  [
    'HostEndpoint: long interface name, bad expected IP, port name',
    'kind: HostEndpoint\nmetadata: {name: h}\nspec: {node: n, interfaceName: this-name-is-too-long, expectedIPs: [10.0.0.300], ports: [{name: HTTP, protocol: TCP, port: 80}]}\n',
    [
      { path: 'spec.expectedIPs[0]', rule: 'must be a valid IP address' },
      {
        path: 'spec.interfaceName',
        rule: "must be an interface name of 1-15 letters, digits, '_', '.' or '-' (or '*')",
      },
      {
        path: 'spec.ports[0].name',
        rule: "must be a port name of at most 15 lower-case letters, digits and '-', with at least one letter and no leading, trailing or double '-'",
      },
    ],
  ],
  [
    'WorkloadEndpoint: networks wider than one address, NAT outside them, bad MAC',
    `kind: WorkloadEndpoint
metadata: {name: w, namespace: ns}
spec:
  ipNetworks: [10.0.0.0/24]
  ipNATs: [{internalIP: 10.1.0.1, externalIP: "fd00::1"}]
  mac: "ee:ee:ee"
  ports: [{protocol: UDP, port: 53}]
`,
    [
      { path: 'spec.ipNATs[0].externalIP', rule: 'must be of the same IP version as internalIP' },
      { path: 'spec.ipNATs[0].internalIP', rule: "must be one of the endpoint's ipNetworks" },
      { path: 'spec.ipNetworks[0]', rule: 'must be a single address (/32)' },
      { path: 'spec.mac', rule: 'must be a MAC address such as ee:ee:ee:ee:ee:ee' },
      { path: 'spec.ports[0].name', rule: 'is required unless hostPort is set' },
    ],
  ],
  [
    'Node: empty bgp, bad addresses',
    'kind: Node\nmetadata: {name: n}\nspec: {bgp: {}, ipv4VXLANTunnelAddr: "fd00::1", addresses: [{address: 10.0.0.1, type: Public}]}\n',
    [
      { path: 'spec.addresses[0].type', rule: 'must be one of: CalicoNodeIP, InternalIP, ExternalIP' },
      { path: 'spec.bgp', rule: 'must not be empty: leave it out instead' },
      { path: 'spec.ipv4VXLANTunnelAddr', rule: 'must be a valid IPv4 address' },
    ],
  ],
  [
    'Node: BGP address without prefix length',
    'kind: Node\nmetadata: {name: n}\nspec: {bgp: {ipv4Address: 10.0.0.1, ipv6Address: 10.0.0.1/24, routeReflectorClusterID: x}}\n',
    [
      {
        path: 'spec.bgp.ipv4Address',
        rule: 'must be an IPv4 address with its prefix length, such as 10.0.0.1/24',
      },
      {
        path: 'spec.bgp.ipv6Address',
        rule: 'must be an IPv6 address with its prefix length, such as fd00::1/64',
      },
      { path: 'spec.bgp.routeReflectorClusterID', rule: 'must be a valid IPv4 address' },
    ],
  ],

  // ---- singletons ------------------------------------------------------------------------------------
  [
    'ClusterInformation: not named default, wrong field type',
    'kind: ClusterInformation\nmetadata: {name: cluster}\nspec: {datastoreReady: "true"}\n',
    [
      { path: 'metadata.name', rule: 'must be "default": there is one ClusterInformation per cluster' },
      { path: 'spec.datastoreReady', rule: 'must be true or false' },
    ],
  ],
  [
    'KubeControllersConfiguration: name, enums, template without match',
    `kind: KubeControllersConfiguration
metadata: {name: kcc}
spec:
  healthChecks: On
  controllers:
    node: {hostEndpoint: {autoCreate: true, templates: [{generateName: x}]}}
    loadBalancer: {assignIPs: Some}
    ipam: {}
`,
    [
      {
        path: 'metadata.name',
        rule: 'must be "default": there is one KubeControllersConfiguration per cluster',
      },
      { path: 'spec.controllers.ipam', rule: 'is not a known field' },
      {
        path: 'spec.controllers.loadBalancer.assignIPs',
        rule: 'must be one of: AllServices, RequestedServicesOnly',
      },
      { path: 'spec.controllers.node.hostEndpoint.autoCreate', rule: 'must be one of: Enabled, Disabled' },
      {
        path: 'spec.controllers.node.hostEndpoint.templates[0]',
        rule: 'must set interfaceCIDRs or interfacePattern',
      },
      { path: 'spec.healthChecks', rule: 'must be one of: Enabled, Disabled' },
    ],
  ],
];

describe('invalid documents report every broken rule', () => {
  it('has a table of at least 40 documents, many with 3 or more simultaneous errors', () => {
    expect(cases.length).toBeGreaterThanOrEqual(40);
    expect(cases.filter(([, , e]) => e.length >= 3).length).toBeGreaterThanOrEqual(20);
  });

  it.each(cases)('%s', (_title, body, expected) => {
    const text = /^apiVersion:|^- |^#/.test(body) ? body : `apiVersion: projectcalico.org/v3\n${body}`;
    // As calicoctl reads a file: YAML 1.1, its scalars in string fields stored as upstream does.
    const docs = decodeDocuments(text, 'case.yaml').map((d) => storeStringScalars(d).doc);
    const input = docs.length === 1 ? docs[0] : docs;
    const r = validateResource(input);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    if (expected.length === 0) {
      expect(r.errors).toEqual([
        { path: '', rule: 'must be an object with apiVersion, kind, metadata and spec' },
      ]);
      return;
    }
    expect(r.errors).toEqual(expected);
  });
});
