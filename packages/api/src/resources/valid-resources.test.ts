import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { KIND_NAMES } from '../kinds.js';
import {
  applyDefaults,
  decodeDocuments,
  type IPPool,
  type NetworkPolicy,
  type Resource,
  resourceSchemas,
  storeStringScalars,
  validateResource,
  validateResourceOrThrow,
} from './index.js';

/** Decode one YAML document, validate it, and return the defaulted resource (failing on errors). */
function accept(yaml: string): Resource {
  // As calicoctl reads a file: YAML 1.1, its scalars in string fields stored as upstream does.
  const docs = decodeDocuments(yaml, 'test.yaml').map((d) => storeStringScalars(d).doc);
  expect(docs).toHaveLength(1);
  const before = JSON.stringify(docs[0]);
  const r = validateResource(docs[0]);
  expect(JSON.stringify(docs[0])).toBe(before); // the input is never modified
  if (!r.ok) throw new Error(`unexpected errors: ${JSON.stringify(r.errors, null, 2)}`);
  // What comes back validates again and is stable (defaulting is idempotent).
  const again = validateResource(JSON.parse(JSON.stringify(r.value)));
  expect(again).toEqual({ ok: true, value: r.value });
  return r.value;
}

const V3 = 'apiVersion: projectcalico.org/v3';

describe('upstream documentation examples', () => {
  it('IPPool', () => {
    const v = accept(`${V3}
kind: IPPool
metadata:
  name: my.ippool-1
spec:
  cidr: 10.1.0.0/16
  ipipMode: CrossSubnet
  natOutgoing: true
  disabled: false
  nodeSelector: all()
  allowedUses:
    - Workload
    - Tunnel
`);
    expect(v).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: 'my.ippool-1' },
      spec: {
        cidr: '10.1.0.0/16',
        ipipMode: 'CrossSubnet',
        vxlanMode: 'Never',
        natOutgoing: true,
        disabled: false,
        nodeSelector: 'all()',
        allowedUses: ['Workload', 'Tunnel'],
        blockSize: 26,
        assignmentMode: 'Automatic',
      },
    });
  });

  const policyBody = `spec:
  selector: role == 'database'
  types:
    - Ingress
    - Egress
  ingress:
    - action: Allow
      metadata:
        annotations:
          from: frontend
          to: database
      protocol: TCP
      source:
        selector: role == 'frontend'
      destination:
        ports:
          - 6379
  egress:
    - action: Allow
`;
  // clientv3 leaves an unset tier unset in the spec; only the tier label names it.
  const expectedSpec = {
    selector: "role == 'database'",
    types: ['Ingress', 'Egress'],
    ingress: [
      {
        action: 'Allow',
        metadata: { annotations: { from: 'frontend', to: 'database' } },
        protocol: 'TCP',
        source: { selector: "role == 'frontend'" },
        destination: { ports: [6379] },
      },
    ],
    egress: [{ action: 'Allow' }],
  };

  it('GlobalNetworkPolicy', () => {
    const v = accept(`${V3}\nkind: GlobalNetworkPolicy\nmetadata:\n  name: allow-tcp-6379\n${policyBody}`);
    expect(v).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkPolicy',
      metadata: { name: 'allow-tcp-6379', labels: { 'projectcalico.org/tier': 'default' } },
      // Upstream v3.32 stores the default tier into a policy that names none.
      spec: { tier: 'default', ...expectedSpec },
    });
  });

  it('NetworkPolicy', () => {
    const v = accept(
      `${V3}\nkind: NetworkPolicy\nmetadata:\n  name: allow-tcp-6379\n  namespace: production\n${policyBody}`,
    );
    expect(v).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: {
        name: 'allow-tcp-6379',
        namespace: 'production',
        labels: { 'projectcalico.org/tier': 'default' },
      },
      spec: { tier: 'default', ...expectedSpec },
    });
  });

  it('BGPPeer', () => {
    const v = accept(`${V3}
kind: BGPPeer
metadata:
  name: some.name
spec:
  node: rack1-host1
  peerIP: 192.168.1.1
  asNumber: 63400
`);
    expect(v).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'BGPPeer',
      metadata: { name: 'some.name' },
      spec: { node: 'rack1-host1', peerIP: '192.168.1.1', asNumber: 63400 },
    });
  });
});

describe('one valid resource of every kind, with defaults applied on write', () => {
  const cases: Array<[string, string, unknown]> = [
    [
      'IPPool (IPv6, block size and CIDR canonicalised)',
      `kind: IPPool
metadata: {name: v6-pool}
spec: {cidr: "FD00:0:0:0::/48", vxlanMode: CrossSubnet}`,
      {
        metadata: { name: 'v6-pool' },
        spec: {
          cidr: 'fd00::/48',
          vxlanMode: 'CrossSubnet',
          ipipMode: 'Never',
          blockSize: 122,
          nodeSelector: 'all()',
          allowedUses: ['Workload', 'Tunnel'],
          assignmentMode: 'Automatic',
        },
      },
    ],
    [
      'IPReservation',
      `kind: IPReservation
metadata: {name: keep-out}
spec: {reservedCIDRs: [10.0.0.0/28, 10.0.1.7, "fd00::/120"]}`,
      { metadata: { name: 'keep-out' }, spec: { reservedCIDRs: ['10.0.0.0/28', '10.0.1.7', 'fd00::/120'] } },
    ],
    [
      'BGPConfiguration',
      `kind: BGPConfiguration
metadata: {name: default}
spec:
  nodeToNodeMeshEnabled: false
  asNumber: 64512
  serviceClusterIPs: [{cidr: 10.96.0.0/12}]
  communities: [{name: bgp-large-community, value: "63400:300:100"}]
  prefixAdvertisements: [{cidr: 172.218.4.0/26, communities: [bgp-large-community, "63400:120"]}]
  listenPort: 178
  bindMode: NodeIP
  ignoredInterfaces: ["iface-*"]`,
      {
        metadata: { name: 'default' },
        spec: {
          nodeToNodeMeshEnabled: false,
          asNumber: 64512,
          serviceClusterIPs: [{ cidr: '10.96.0.0/12' }],
          communities: [{ name: 'bgp-large-community', value: '63400:300:100' }],
          prefixAdvertisements: [
            { cidr: '172.218.4.0/26', communities: ['bgp-large-community', '63400:120'] },
          ],
          listenPort: 178,
          bindMode: 'NodeIP',
          ignoredInterfaces: ['iface-*'],
        },
      },
    ],
    [
      'BGPPeer (peerSelector, IPv6 peer with port elsewhere)',
      `kind: BGPPeer
metadata: {name: rr-mesh}
spec: {nodeSelector: "!has(route-reflector)", peerSelector: has(route-reflector), nextHopMode: Self, keepaliveTime: 10s}`,
      {
        metadata: { name: 'rr-mesh' },
        spec: {
          nodeSelector: '!has(route-reflector)',
          peerSelector: 'has(route-reflector)',
          nextHopMode: 'Self',
          keepaliveTime: '10s',
        },
      },
    ],
    [
      'BGPFilter',
      `kind: BGPFilter
metadata: {name: my-filter}
spec:
  exportV4: [{action: Accept, matchOperator: In, cidr: 77.0.0.0/16, prefixLength: {min: 24, max: 28}}]
  importV6: [{action: Reject, matchOperator: NotIn, cidr: "9000::/64", interface: "eth*"}]`,
      {
        metadata: { name: 'my-filter' },
        spec: {
          exportV4: [
            {
              action: 'Accept',
              matchOperator: 'In',
              cidr: '77.0.0.0/16',
              prefixLength: { min: 24, max: 28 },
            },
          ],
          importV6: [{ action: 'Reject', matchOperator: 'NotIn', cidr: '9000::/64', interface: 'eth*' }],
        },
      },
    ],
    [
      'FelixConfiguration',
      `kind: FelixConfiguration
metadata: {name: default}
spec:
  ipv6Support: false
  logSeverityScreen: Debug
  reportingInterval: 0s
  iptablesRefreshInterval: 1m30s
  vxlanVNI: 4096
  chainInsertMode: append
  failsafeInboundHostPorts: [{protocol: tcp, port: 22, net: 10.0.0.0/8}, {port: 179}]
  kubeNodePortRanges: [30000:32767, 8080]
  healthTimeoutOverrides: [{name: CalculationGraph, timeout: 30s}]
  routeTableRanges: [{min: 1, max: 250}]
  natOutgoingAddress: 198.18.0.1
  bpfLogFilters: {all: "tcp port 80"}`,
      {
        metadata: { name: 'default' },
        spec: {
          ipv6Support: false,
          logSeverityScreen: 'Debug',
          reportingInterval: '0s',
          iptablesRefreshInterval: '1m30s',
          vxlanVNI: 4096,
          chainInsertMode: 'append',
          failsafeInboundHostPorts: [{ protocol: 'tcp', port: 22, net: '10.0.0.0/8' }, { port: 179 }],
          kubeNodePortRanges: ['30000:32767', 8080],
          healthTimeoutOverrides: [{ name: 'CalculationGraph', timeout: '30s' }],
          routeTableRanges: [{ min: 1, max: 250 }],
          natOutgoingAddress: '198.18.0.1',
          bpfLogFilters: { all: 'tcp port 80' },
          // clientv3's setDefaults; nftablesMode is a CRD default only.
          floatingIPs: 'Disabled',
          bpfConnectTimeLoadBalancing: 'TCP',
          bpfHostNetworkedNATWithoutCTLB: 'Enabled',
        },
      },
    ],
    [
      'ClusterInformation',
      `kind: ClusterInformation
metadata: {name: default}
spec: {clusterGUID: 0e5fb0b3a2c94f3e8a2d6f1c9b7e4d21, clusterType: "typha,kdd", calicoVersion: v3.32.1, datastoreReady: true}`,
      {
        metadata: { name: 'default' },
        spec: {
          clusterGUID: '0e5fb0b3a2c94f3e8a2d6f1c9b7e4d21',
          clusterType: 'typha,kdd',
          calicoVersion: 'v3.32.1',
          datastoreReady: true,
        },
      },
    ],
    [
      'Node',
      `kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1}}
spec:
  bgp: {ipv4Address: 198.18.0.11/24, asNumber: 64512, ipv4IPIPTunnelAddr: 198.19.0.1}
  ipv4VXLANTunnelAddr: 198.19.1.0
  vxlanTunnelMACAddr: "66:b2:9a:1f:8c:01"
  orchRefs: [{nodeName: node-1, orchestrator: k8s}]
  addresses: [{address: 198.18.0.11, type: CalicoNodeIP}]
status: {podCIDRs: [198.19.0.0/24]}`,
      {
        metadata: { name: 'node-1', labels: { 'kubernetes.io/hostname': 'node-1' } },
        spec: {
          bgp: { ipv4Address: '198.18.0.11/24', asNumber: 64512, ipv4IPIPTunnelAddr: '198.19.0.1' },
          ipv4VXLANTunnelAddr: '198.19.1.0',
          vxlanTunnelMACAddr: '66:b2:9a:1f:8c:01',
          orchRefs: [{ nodeName: 'node-1', orchestrator: 'k8s' }],
          addresses: [{ address: '198.18.0.11', type: 'CalicoNodeIP' }],
        },
        status: { podCIDRs: ['198.19.0.0/24'] },
      },
    ],
    [
      'WorkloadEndpoint (namespace and orchestrator labels set)',
      `kind: WorkloadEndpoint
metadata: {name: node--1-k8s-web--1-eth0, namespace: prod, labels: {app: web}}
spec:
  orchestrator: k8s
  node: node-1
  pod: web-1
  endpoint: eth0
  containerID: 1a2b3c4d5e6f
  interfaceName: cali0ef24b1e1a1
  mac: "ee:ee:ee:ee:ee:ee"
  ipNetworks: [198.19.0.5/32]
  profiles: [kns.prod, ksa.prod.default]
  ports: [{name: http, protocol: TCP, port: 8080}]`,
      {
        metadata: {
          name: 'node--1-k8s-web--1-eth0',
          namespace: 'prod',
          labels: {
            app: 'web',
            'projectcalico.org/namespace': 'prod',
            'projectcalico.org/orchestrator': 'k8s',
          },
        },
        spec: {
          orchestrator: 'k8s',
          node: 'node-1',
          pod: 'web-1',
          endpoint: 'eth0',
          containerID: '1a2b3c4d5e6f',
          interfaceName: 'cali0ef24b1e1a1',
          mac: 'ee:ee:ee:ee:ee:ee',
          ipNetworks: ['198.19.0.5/32'],
          profiles: ['kns.prod', 'ksa.prod.default'],
          ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
        },
      },
    ],
    [
      'HostEndpoint',
      `kind: HostEndpoint
metadata: {name: node-1-eth0, labels: {role: gateway}}
spec: {node: node-1, interfaceName: eth0, expectedIPs: [198.18.0.11], profiles: [projectcalico-default-allow], ports: [{name: ssh, protocol: TCP, port: 22}]}`,
      {
        metadata: { name: 'node-1-eth0', labels: { role: 'gateway' } },
        spec: {
          node: 'node-1',
          interfaceName: 'eth0',
          expectedIPs: ['198.18.0.11'],
          profiles: ['projectcalico-default-allow'],
          ports: [{ name: 'ssh', protocol: 'TCP', port: 22 }],
        },
      },
    ],
    [
      'NetworkPolicy (types defaulted to Egress, explicit tier)',
      `kind: NetworkPolicy
metadata: {name: security.deny-egress, namespace: prod}
spec:
  tier: security
  order: 100
  egress:
  - action: Deny
    protocol: ICMP
    icmp: {type: 8, code: 0}
    destination: {nets: [10.0.0.0/8], namespaceSelector: global()}`,
      {
        metadata: {
          name: 'security.deny-egress',
          namespace: 'prod',
          labels: { 'projectcalico.org/tier': 'security' },
        },
        spec: {
          tier: 'security',
          order: 100,
          types: ['Egress'],
          egress: [
            {
              action: 'Deny',
              protocol: 'ICMP',
              icmp: { type: 8, code: 0 },
              destination: { nets: ['10.0.0.0/8'], namespaceSelector: 'global()' },
            },
          ],
        },
      },
    ],
    [
      'GlobalNetworkPolicy (preDNAT, no rules → Ingress)',
      `kind: GlobalNetworkPolicy
metadata: {name: pre-dnat}
spec: {selector: has(host-endpoint), preDNAT: true, applyOnForward: true}`,
      {
        metadata: { name: 'pre-dnat', labels: { 'projectcalico.org/tier': 'default' } },
        spec: {
          tier: 'default',
          selector: 'has(host-endpoint)',
          preDNAT: true,
          applyOnForward: true,
          types: ['Ingress'],
        },
      },
    ],
    [
      'NetworkSet',
      `kind: NetworkSet
metadata: {name: external-db, namespace: prod, labels: {role: db}}
spec: {nets: [192.0.2.0/24, "2001:db8::/32"]}`,
      {
        metadata: { name: 'external-db', namespace: 'prod', labels: { role: 'db' } },
        spec: { nets: ['192.0.2.0/24', '2001:db8::/32'] },
      },
    ],
    [
      'GlobalNetworkSet',
      `kind: GlobalNetworkSet
metadata: {name: threats}
spec: {nets: [198.51.100.0/24]}`,
      { metadata: { name: 'threats' }, spec: { nets: ['198.51.100.0/24'] } },
    ],
    [
      'Profile',
      `kind: Profile
metadata: {name: kns.prod}
spec:
  ingress: [{action: Allow}]
  egress: [{action: Allow}]
  labelsToApply: {pcns.projectcalico.org/name: prod}`,
      {
        metadata: { name: 'kns.prod' },
        spec: {
          ingress: [{ action: 'Allow' }],
          egress: [{ action: 'Allow' }],
          labelsToApply: { 'pcns.projectcalico.org/name': 'prod' },
        },
      },
    ],
    [
      'Tier (defaultAction defaulted to Deny)',
      `kind: Tier
metadata: {name: security}
spec: {order: 100}`,
      { metadata: { name: 'security' }, spec: { order: 100, defaultAction: 'Deny' } },
    ],
    [
      'Tier (order defaulted to 1,000,000)',
      `kind: Tier
metadata: {name: app}
spec: {defaultAction: Pass}`,
      { metadata: { name: 'app' }, spec: { order: 1_000_000, defaultAction: 'Pass' } },
    ],
    [
      'FelixConfiguration (deprecated bpfConnectTimeLoadBalancingEnabled decides the CTLB fields)',
      `kind: FelixConfiguration
metadata: {name: node.n1}
spec: {bpfConnectTimeLoadBalancingEnabled: true, floatingIPs: Enabled}`,
      {
        metadata: { name: 'node.n1' },
        spec: {
          bpfConnectTimeLoadBalancingEnabled: true,
          floatingIPs: 'Enabled',
          bpfConnectTimeLoadBalancing: 'Enabled',
          bpfHostNetworkedNATWithoutCTLB: 'Disabled',
        },
      },
    ],
    [
      'KubeControllersConfiguration (node controller gets its leak grace period)',
      `kind: KubeControllersConfiguration
metadata: {name: default}
spec: {prometheusMetricsPort: 0, controllers: {node: {syncLabels: Disabled}}}`,
      {
        metadata: { name: 'default' },
        spec: {
          prometheusMetricsPort: 0,
          controllers: { node: { syncLabels: 'Disabled', leakGracePeriod: '15m0s' } },
        },
      },
    ],
    [
      'StagedNetworkPolicy Set (types and tier label as for a policy)',
      `kind: StagedNetworkPolicy
metadata: {name: allow-web, namespace: prod}
spec: {stagedAction: Set, selector: app == 'web', ingress: [{action: Allow}]}`,
      {
        metadata: { name: 'allow-web', namespace: 'prod', labels: { 'projectcalico.org/tier': 'default' } },
        spec: {
          stagedAction: 'Set',
          tier: 'default',
          selector: "app == 'web'",
          ingress: [{ action: 'Allow' }],
          types: ['Ingress'],
        },
      },
    ],
    [
      'StagedGlobalNetworkPolicy Delete (no types)',
      `kind: StagedGlobalNetworkPolicy
metadata: {name: security.block-all}
spec: {stagedAction: Delete, tier: security}`,
      {
        metadata: { name: 'security.block-all', labels: { 'projectcalico.org/tier': 'security' } },
        spec: { stagedAction: 'Delete', tier: 'security' },
      },
    ],
    [
      'StagedKubernetesNetworkPolicy',
      `kind: StagedKubernetesNetworkPolicy
metadata: {name: deny-all, namespace: prod}
spec: {stagedAction: Set, podSelector: {matchLabels: {app: db}}, policyTypes: [Ingress]}`,
      {
        metadata: { name: 'deny-all', namespace: 'prod' },
        spec: { stagedAction: 'Set', podSelector: { matchLabels: { app: 'db' } }, policyTypes: ['Ingress'] },
      },
    ],
    [
      'CalicoNodeStatus',
      `kind: CalicoNodeStatus
metadata: {name: n1-status}
spec: {node: n1, classes: [Agent, BGP, Routes], updatePeriodSeconds: 10}`,
      {
        metadata: { name: 'n1-status' },
        spec: { node: 'n1', classes: ['Agent', 'BGP', 'Routes'], updatePeriodSeconds: 10 },
      },
    ],
    [
      'Tier kube-admin (fixed order and Pass filled in)',
      `kind: Tier
metadata: {name: kube-admin}`,
      { metadata: { name: 'kube-admin' }, spec: { order: 1000, defaultAction: 'Pass' } },
    ],
    [
      'KubeControllersConfiguration',
      `kind: KubeControllersConfiguration
metadata: {name: default}
spec:
  etcdV3CompactionPeriod: 10m
  controllers:
    node: {reconcilerPeriod: 5m, syncLabels: Enabled, leakGracePeriod: 15m, hostEndpoint: {autoCreate: Disabled}}
    policy: {reconcilerPeriod: 5m}
    loadBalancer: {}`,
      {
        metadata: { name: 'default' },
        spec: {
          etcdV3CompactionPeriod: '10m',
          prometheusMetricsPort: 9094,
          controllers: {
            node: {
              reconcilerPeriod: '5m',
              syncLabels: 'Enabled',
              leakGracePeriod: '15m',
              hostEndpoint: { autoCreate: 'Disabled' },
            },
            policy: { reconcilerPeriod: '5m' },
            loadBalancer: { assignIPs: 'AllServices' },
          },
        },
      },
    ],
  ];

  it.each(cases)('%s', (_title, body, expected) => {
    const v = accept(`${V3}\n${body}\n`);
    const { apiVersion, kind, ...rest } = v as Resource & Record<string, unknown>;
    expect(apiVersion).toBe('projectcalico.org/v3');
    expect(KIND_NAMES).toContain(kind);
    expect(rest).toEqual(expected);
  });

  it('covers every kind', () => {
    const kinds = new Set(cases.map(([, body]) => /^kind: (\w+)/.exec(body)?.[1]));
    for (const k of ['IPPool', 'GlobalNetworkPolicy', 'NetworkPolicy', 'BGPPeer']) kinds.add(k);
    expect([...kinds].sort()).toEqual([...KIND_NAMES].sort());
  });
});

describe('FelixConfiguration', () => {
  it('accepts every field of the compatibility reference, typed', () => {
    const spec = {
      ipv6Support: true,
      logSeverityScreen: 'Info',
      logSeverityFile: 'Warning',
      logFilePath: 'none',
      defaultEndpointToHostAction: 'Return',
      chainInsertMode: 'insert',
      interfacePrefix: 'cali,tap',
      interfaceExclude: 'kube-ipvs0,/^veth/',
      iptablesRefreshInterval: '180s',
      routeRefreshInterval: '90s',
      ipsetsRefreshInterval: '90s',
      nftablesMode: 'Enabled',
      nftablesRefreshInterval: '3m',
      iptablesBackend: 'NFT',
      ipipEnabled: false,
      vxlanEnabled: true,
      ipipMTU: 0,
      vxlanMTU: 1450,
      vxlanMTUV6: 1430,
      vxlanPort: 4789,
      vxlanVNI: 4096,
      healthEnabled: true,
      healthHost: 'localhost',
      healthPort: 9099,
      prometheusMetricsEnabled: true,
      prometheusMetricsPort: 9091,
      failsafeInboundHostPorts: [
        { protocol: 'TCP', port: 22 },
        { protocol: 'UDP', port: 68 },
      ],
      failsafeOutboundHostPorts: [{ protocol: 'UDP', port: 53 }],
      natOutgoingAddress: '198.18.0.1',
      natPortRange: '32768:65535',
      iptablesMarkMask: 0xffff0000,
      nftablesMarkMask: 0xffff0000,
      iptablesFilterAllowAction: 'Accept',
      iptablesFilterDenyAction: 'Drop',
      reportingInterval: '30s',
      reportingTTL: '90s',
      bpfEnabled: false,
      wireguardEnabled: false,
      endpointReportingEnabled: false,
    };
    const r = validateResource({
      apiVersion: 'projectcalico.org/v3',
      kind: 'FelixConfiguration',
      metadata: { name: 'node.node-1' },
      spec,
    });
    expect(r).toEqual({
      ok: true,
      value: {
        apiVersion: 'projectcalico.org/v3',
        kind: 'FelixConfiguration',
        metadata: { name: 'node.node-1' },
        spec: {
          ...spec,
          floatingIPs: 'Disabled',
          bpfConnectTimeLoadBalancing: 'TCP',
          bpfHostNetworkedNATWithoutCTLB: 'Enabled',
        },
      },
    });
  });

  it('allows a nodeSelector on a selector-scoped configuration', () => {
    const r = validateResource({
      apiVersion: 'projectcalico.org/v3',
      kind: 'FelixConfiguration',
      metadata: { name: 'bpf-nodes' },
      spec: { nodeSelector: "dataplane == 'bpf'", bpfEnabled: true },
    });
    expect(r.ok).toBe(true);
  });
});

describe('empty fields', () => {
  it('reads a field left empty in YAML (null) as unset, as Go does', () => {
    const v = accept(`${V3}
kind: ClusterInformation
metadata:
  name: default
  labels:
spec:
`);
    expect(v).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'ClusterInformation',
      metadata: { name: 'default' },
      spec: {},
    });
  });
});

describe('read-path defaulting', () => {
  it('fills IPPool defaults into a stored pool that lacks them', () => {
    const stored: IPPool = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: 'old', resourceVersion: '7' },
      spec: { cidr: '198.19.0.0/16', natOutgoing: true },
    };
    expect(applyDefaults<'IPPool'>(stored)).toEqual({
      ...stored,
      spec: {
        cidr: '198.19.0.0/16',
        natOutgoing: true,
        vxlanMode: 'Never',
        ipipMode: 'Never',
        blockSize: 26,
        nodeSelector: 'all()',
        allowedUses: ['Workload', 'Tunnel'],
        assignmentMode: 'Automatic',
      },
    });
    expect(stored.spec).toEqual({ cidr: '198.19.0.0/16', natOutgoing: true });
  });

  it('gives a stored policy without types its types and tier label, and leaves an unset tier unset', () => {
    const stored: NetworkPolicy = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'NetworkPolicy',
      metadata: { name: 'p', namespace: 'ns' },
      spec: { egress: [{ action: 'Allow' }], ingress: [{ action: 'Deny' }] },
    };
    const r = applyDefaults<'NetworkPolicy'>(stored);
    expect(r.spec.types).toEqual(['Ingress', 'Egress']);
    expect(r.spec.tier).toBeUndefined();
    expect(r.metadata.labels).toEqual({ 'projectcalico.org/tier': 'default' });
  });

  it('leaves kinds without read defaults untouched', () => {
    const hep = {
      apiVersion: 'projectcalico.org/v3' as const,
      kind: 'HostEndpoint' as const,
      metadata: { name: 'h' },
      spec: { node: 'n', interfaceName: 'eth0' },
    };
    expect(applyDefaults<'HostEndpoint'>(hep)).toBe(hep);
  });
});

describe('validateResourceOrThrow', () => {
  it('returns the defaulted resource', () => {
    const r = validateResourceOrThrow({
      apiVersion: 'projectcalico.org/v3',
      kind: 'Tier',
      metadata: { name: 't1' },
    });
    expect(r).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'Tier',
      metadata: { name: 't1' },
      spec: { order: 1_000_000, defaultAction: 'Deny' },
    });
  });

  it('throws a ValidationError that lists every error under the subject', () => {
    const doc = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: 'Bad_Name' },
      spec: { cidr: '10.0.0.1/8' },
    };
    let caught: unknown;
    try {
      validateResourceOrThrow(doc);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ValidationError);
    const err = caught as ValidationError;
    expect(err.code).toBe('invalid-resource');
    expect(err.subject).toBe('IPPool "Bad_Name"');
    expect(err.message).toBe(
      'IPPool "Bad_Name" is invalid:\n' +
        "  - metadata.name: must be a lower-case DNS-1123 subdomain: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters\n" +
        '  - spec.cidr: is not strictly masked: host bits are set (did you mean 10.0.0.0/8?)',
    );
    expect(() => validateResourceOrThrow(doc, { subject: 'document 2 of pools.yaml' })).toThrow(
      /^document 2 of pools\.yaml is invalid:/,
    );
  });
});

describe('resourceSchemas', () => {
  it('has a JSON-Schema-convertible spec schema for every kind, closed to unknown fields', async () => {
    const { toJSONSchema } = await import('zod');
    expect(Object.keys(resourceSchemas).sort()).toEqual([...KIND_NAMES].sort());
    for (const k of KIND_NAMES) {
      const js = toJSONSchema(resourceSchemas[k]) as { type: string; additionalProperties: boolean };
      expect(js.type).toBe('object');
      expect(js.additionalProperties).toBe(false);
    }
    const pool = toJSONSchema(resourceSchemas.IPPool) as {
      required: string[];
      properties: Record<string, unknown>;
    };
    expect(pool.required).toEqual(['cidr']);
    expect(pool.properties.ipipMode).toEqual({ type: 'string', enum: ['Never', 'Always', 'CrossSubnet'] });
  });
});
