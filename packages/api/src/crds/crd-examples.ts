/**
 * One object of every CRD kind in the shape upstream Calico stores it in the Kubernetes datastore
 * (crd.projectcalico.org/v1): what calico-node, kube-controllers, calico-ipam and calicoctl write,
 * with most of each kind's fields set. Tests hold the CRDs against them: nothing in them may be
 * pruned or refused.
 *
 * IPAM sequence numbers are nanosecond timestamps (int64); the ones here are whole seconds, which a
 * JavaScript number holds exactly.
 *
 * Pure data.
 */
import { CRD_API_VERSION } from './crd-manifests.js';

export interface CrdObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  readonly spec: Readonly<Record<string, unknown>>;
  readonly status?: Readonly<Record<string, unknown>>;
}

/** The namespace the namespaced examples live in. */
export const CRD_EXAMPLE_NAMESPACE = 'calico-crd-examples';

const CLAIM_TIME = '2026-01-02T10:00:03Z';
const SEQUENCE = 1_767_348_003_000_000_000;

const rules = () => ({
  ingress: [
    {
      action: 'Allow',
      protocol: 'TCP',
      source: {
        selector: "role == 'frontend'",
        namespaceSelector: 'projectcalico.org/name == "web"',
        notNets: ['198.19.9.0/24'],
        serviceAccounts: { names: ['web'], selector: "team == 'a'" },
      },
      destination: { ports: [80, '8080:8090', 'metrics'], notPorts: [8081] },
      http: { methods: ['GET'], paths: [{ exact: '/healthz' }, { prefix: '/api/' }] },
      metadata: { annotations: { 'rule.example.org/why': 'frontends reach the api' } },
    },
    {
      action: 'Allow',
      protocol: 'ICMP',
      ipVersion: 4,
      icmp: { type: 8, code: 0 },
      notICMP: { type: 13 },
    },
    { action: 'Deny', protocol: 17, notProtocol: 'TCP', source: { nets: ['198.18.0.0/24'] } },
    { action: 'Allow', source: { services: { name: 'kube-dns', namespace: 'kube-system' } } },
  ],
  egress: [
    { action: 'Pass', destination: { notSelector: 'has(quarantine)', nets: ['198.19.0.0/16'] } },
    { action: 'Log', protocol: 'UDP', destination: { ports: [53] } },
  ],
});

const policyMetadata = (name: string) =>
  JSON.stringify({ name, uid: '0b1c2d3e-4f50-4617-8283-94a5b6c7d8e9', creationTimestamp: CLAIM_TIME });

const networkPolicySpec = () => ({
  tier: 'default',
  order: 100.5,
  ...rules(),
  selector: "app == 'api'",
  types: ['Ingress', 'Egress'],
  serviceAccountSelector: "role != 'batch'",
  performanceHints: ['AssumeNeededOnEveryNode'],
});

const globalNetworkPolicySpec = () => ({
  tier: 'security',
  order: 10,
  ...rules(),
  selector: 'all()',
  types: ['Ingress', 'Egress'],
  doNotTrack: false,
  preDNAT: false,
  applyOnForward: true,
  serviceAccountSelector: 'all()',
  namespaceSelector: 'has(projectcalico.org/name)',
  performanceHints: ['AssumeNeededOnEveryNode'],
});

const birdStatus = (routerID: string) => ({
  lastBootTime: '2026-01-02 10:00:00',
  lastReconfigurationTime: '2026-01-02 10:00:01',
  routerID,
  state: 'Ready',
  version: 'v0.3.3+birdv1.6.8',
});

const kubeControllersSpec = () => ({
  logSeverityScreen: 'Info',
  healthChecks: 'Enabled',
  etcdV3CompactionPeriod: '10m0s',
  prometheusMetricsPort: 9094,
  controllers: {
    node: {
      reconcilerPeriod: '5m0s',
      syncLabels: 'Enabled',
      hostEndpoint: {
        autoCreate: 'Enabled',
        createDefaultHostEndpoint: 'Disabled',
        templates: [
          {
            generateName: 'fabric',
            interfaceCIDRs: ['198.18.0.0/24'],
            interfacePattern: '^eth[0-9]+$',
            labels: { 'hep-kind': 'fabric' },
            nodeSelector: 'all()',
          },
        ],
      },
      leakGracePeriod: '15m0s',
    },
    policy: { reconcilerPeriod: '5m0s' },
    workloadEndpoint: { reconcilerPeriod: '5m0s' },
    serviceAccount: { reconcilerPeriod: '5m0s' },
    namespace: { reconcilerPeriod: '5m0s' },
    loadBalancer: { assignIPs: 'AllServices' },
    policyMigration: { enabled: 'Enabled' },
  },
  debugProfilePort: 0,
});

/** A fresh copy of every example, by plural, each created from scratch (safe to change). */
export function crdExamples(): CrdObject[] {
  const v1 = (
    kind: string,
    metadata: CrdObject['metadata'],
    spec: Record<string, unknown>,
    status?: Record<string, unknown>,
  ): CrdObject => ({ apiVersion: CRD_API_VERSION, kind, metadata, spec, ...(status ? { status } : {}) });
  const ns = CRD_EXAMPLE_NAMESPACE;

  return [
    v1(
      'BGPConfiguration',
      { name: 'default' },
      {
        logSeverityScreen: 'Info',
        nodeToNodeMeshEnabled: true,
        asNumber: 64512,
        serviceLoadBalancerIPs: [{ cidr: '198.19.250.0/24' }],
        serviceExternalIPs: [{ cidr: '198.19.251.0/24' }],
        serviceClusterIPs: [{ cidr: '198.18.128.0/24' }],
        serviceLoadBalancerAggregation: 'Enabled',
        communities: [{ name: 'lab', value: '64512:100' }],
        prefixAdvertisements: [{ cidr: '198.19.0.0/16', communities: ['lab', '64512:200:300'] }],
        listenPort: 179,
        nodeMeshPassword: { secretKeyRef: { name: 'bgp-secrets', key: 'mesh' } },
        nodeMeshMaxRestartTime: '2m0s',
        bindMode: 'NodeIP',
        ignoredInterfaces: ['kube-ipvs*', 'docker0'],
        localWorkloadPeeringIPV4: '169.254.0.179',
        programClusterRoutes: 'Enabled',
        ipv4NormalRoutePriority: 1024,
        ipv6NormalRoutePriority: 1024,
      },
    ),
    v1(
      'BGPFilter',
      { name: 'export-pods' },
      {
        exportV4: [
          {
            action: 'Accept',
            matchOperator: 'In',
            cidr: '198.19.0.0/16',
            prefixLength: { min: 24, max: 32 },
            source: 'RemotePeers',
            interface: 'eth*',
            peerType: 'eBGP',
            communities: { values: ['64512:100'] },
            asPathPrefix: [64513, 64514],
            priority: 512,
            operations: [
              { addCommunity: { value: '64512:300' } },
              { prependASPath: { prefix: [64512] } },
              { setPriority: { value: 100 } },
            ],
          },
        ],
        importV4: [{ action: 'Reject', matchOperator: 'NotIn', cidr: '198.18.0.0/15' }],
        exportV6: [{ action: 'Accept', matchOperator: 'Equal', cidr: 'fd00:198:19::/48' }],
        importV6: [{ action: 'Reject', prefixLength: { max: 64 }, matchOperator: 'In', cidr: '::/0' }],
      },
    ),
    v1(
      'BGPPeer',
      { name: 'rack-1-tor' },
      {
        nodeSelector: "rack == 'r1'",
        peerIP: '198.18.0.254:179',
        asNumber: 64513,
        localASNumber: 64512,
        password: { secretKeyRef: { name: 'bgp-secrets', key: 'tor', optional: false } },
        sourceAddress: 'UseNodeIP',
        maxRestartTime: '2m0s',
        keepaliveTime: '30s',
        numAllowedLocalASNumbers: 1,
        ttlSecurity: 1,
        filters: ['export-pods'],
        reachableBy: '198.18.0.1',
        nextHopMode: 'Self',
        reversePeering: 'Auto',
      },
    ),
    v1(
      'BlockAffinity',
      {
        name: 'node-1-198-19-0-0-26',
        labels: {
          'projectcalico.org/hostname-hash': '3e6d7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b',
          'projectcalico.org/affinity-type': 'host',
          'projectcalico.org/ip-version': '4',
        },
      },
      { state: 'confirmed', node: 'node-1', type: 'host', cidr: '198.19.0.0/26', deleted: 'false' },
    ),
    v1(
      'CalicoNodeStatus',
      { name: 'node-1-status' },
      { node: 'node-1', classes: ['Agent', 'BGP', 'Routes'], updatePeriodSeconds: 10 },
      {
        lastUpdated: CLAIM_TIME,
        agent: { birdV4: birdStatus('198.18.0.1'), birdV6: birdStatus('198.18.0.1') },
        bgp: {
          numberEstablishedV4: 1,
          numberNotEstablishedV4: 1,
          numberEstablishedV6: 0,
          numberNotEstablishedV6: 0,
          peersV4: [
            { peerIP: '198.18.0.2', type: 'NodeMesh', state: 'Established', since: '10:00:05' },
            { peerIP: '198.18.0.254', type: 'GlobalPeer', state: 'Active', since: '10:00:05' },
          ],
          peersV6: [],
        },
        routes: {
          routesV4: [
            {
              type: 'FIB',
              destination: '198.19.1.0/26',
              gateway: '198.18.0.2',
              interface: 'eth0',
              learnedFrom: { sourceType: 'NodeMesh', peerIP: '198.18.0.2' },
            },
          ],
          routesV6: [],
        },
      },
    ),
    v1(
      'ClusterInformation',
      { name: 'default' },
      {
        clusterGUID: '5b0c3f0e2a1d4c8e9f7a6b5c4d3e2f10',
        clusterType: 'k8s,bgp,kubeadm,kdd',
        calicoVersion: 'v3.32.1',
        datastoreReady: true,
        variant: 'Calico',
      },
    ),
    v1(
      'FelixConfiguration',
      { name: 'default' },
      {
        bpfLogLevel: '',
        bpfConnectTimeLoadBalancing: 'TCP',
        bpfHostNetworkedNATWithoutCTLB: 'Enabled',
        floatingIPs: 'Disabled',
        logSeverityScreen: 'Info',
        reportingInterval: '0s',
        vxlanVNI: 4096,
        vxlanPort: 4789,
        vxlanEnabled: true,
        ipv6Support: false,
        iptablesBackend: 'Auto',
        nftablesMode: 'Enabled',
        chainInsertMode: 'insert',
        defaultEndpointToHostAction: 'Drop',
        healthTimeoutOverrides: [{ name: 'InternalDataplaneMainLoop', timeout: '1m30s' }],
        failsafeInboundHostPorts: [
          { protocol: 'tcp', port: 22 },
          { protocol: 'udp', port: 68, net: '0.0.0.0/0' },
        ],
        failsafeOutboundHostPorts: [{ protocol: 'tcp', port: 179 }],
        kubeNodePortRanges: ['30000:32767', 8080],
        natPortRange: '32768:65535',
        bpfPSNATPorts: 20000,
        istioDSCPMark: 23,
        routeTableRanges: [{ min: 1, max: 250 }],
        bpfLogFilters: { all: 'tcp', eth0: 'udp port 53' },
        bpfConntrackTimeouts: { tcpEstablished: '1h0m0s', udpTimeout: 'Auto' },
        bpfExcludeCIDRsFromNAT: ['198.18.0.0/24'],
        externalNodesList: ['198.18.1.0/24'],
        iptablesMarkMask: 4294901760,
        prometheusMetricsEnabled: true,
        prometheusMetricsPort: 9091,
        wireguardEnabled: false,
        routeRefreshInterval: '1m30s',
      },
    ),
    v1(
      'GlobalNetworkPolicy',
      {
        name: 'security.allow-web',
        labels: { 'projectcalico.org/tier': 'security' },
        annotations: { 'projectcalico.org/metadata': policyMetadata('security.allow-web') },
      },
      globalNetworkPolicySpec(),
    ),
    v1(
      'GlobalNetworkSet',
      { name: 'fabric', labels: { role: 'fabric' } },
      { nets: ['198.18.0.0/24', '198.18.1.7'] },
    ),
    v1(
      'HostEndpoint',
      { name: 'node-1-eth0', labels: { 'hep-kind': 'fabric' } },
      {
        node: 'node-1',
        interfaceName: 'eth0',
        expectedIPs: ['198.18.0.1'],
        profiles: ['projectcalico-default-allow'],
        ports: [{ name: 'ssh', protocol: 'TCP', port: 22 }],
      },
    ),
    v1(
      'IPAMBlock',
      { name: '198-19-0-0-26' },
      {
        cidr: '198.19.0.0/26',
        affinity: 'host:node-1',
        affinityClaimTime: CLAIM_TIME,
        allocations: [0, null, 1, ...Array.from({ length: 61 }, () => null)],
        unallocated: [1, ...Array.from({ length: 61 }, (_, i) => i + 3)],
        attributes: [
          {
            handle_id: 'vxlan-tunnel-addr-node-1',
            secondary: { node: 'node-1', type: 'vxlanTunnelAddress' },
          },
          {
            handle_id: 'k8s-pod-network.0123456789abcdef',
            secondary: {
              namespace: 'default',
              node: 'node-1',
              pod: 'web-0',
              timestamp: '2026-01-02 10:00:03.123456789 +0000 UTC',
            },
            alternate: { namespace: 'default', node: 'node-2', pod: 'web-0' },
          },
        ],
        sequenceNumber: SEQUENCE,
        sequenceNumberForAllocation: { '0': SEQUENCE, '2': SEQUENCE },
        deleted: false,
        strictAffinity: false,
      },
    ),
    v1(
      'IPAMConfig',
      { name: 'default' },
      {
        strictAffinity: false,
        autoAllocateBlocks: true,
        maxBlocksPerHost: 4,
        kubeVirtVMAddressPersistence: 'Enabled',
      },
    ),
    v1(
      'IPAMHandle',
      { name: 'k8s-pod-network.0123456789abcdef' },
      { handleID: 'k8s-pod-network.0123456789abcdef', block: { '198.19.0.0/26': 1 }, deleted: false },
    ),
    v1(
      'IPPool',
      { name: 'default-ipv4-ippool' },
      {
        cidr: '198.19.0.0/16',
        vxlanMode: 'Never',
        ipipMode: 'Never',
        natOutgoing: true,
        blockSize: 26,
        nodeSelector: 'all()',
        namespaceSelector: "pool == 'default'",
        allowedUses: ['Workload', 'Tunnel'],
        assignmentMode: 'Automatic',
      },
      {
        conditions: [
          {
            type: 'Allocatable',
            status: 'True',
            observedGeneration: 1,
            lastTransitionTime: CLAIM_TIME,
            reason: 'PoolEnabled',
            message: 'the pool is enabled and has free blocks',
          },
        ],
      },
    ),
    v1('IPReservation', { name: 'reserved-gateways' }, { reservedCIDRs: ['198.19.0.1', '198.19.255.0/24'] }),
    v1('KubeControllersConfiguration', { name: 'default' }, kubeControllersSpec(), {
      runningConfig: kubeControllersSpec(),
      environmentVars: { DATASTORE_TYPE: 'kubernetes', ENABLED_CONTROLLERS: 'node,loadbalancer' },
    }),
    v1(
      'NetworkPolicy',
      {
        name: 'allow-api',
        namespace: ns,
        labels: { 'projectcalico.org/tier': 'default' },
        annotations: { 'projectcalico.org/metadata': policyMetadata('allow-api') },
      },
      networkPolicySpec(),
    ),
    v1('NetworkSet', { name: 'partners', namespace: ns }, { nets: ['198.19.200.0/24'] }),
    v1(
      'StagedGlobalNetworkPolicy',
      { name: 'security.deny-legacy' },
      { stagedAction: 'Set', ...globalNetworkPolicySpec() },
    ),
    v1(
      'StagedKubernetesNetworkPolicy',
      { name: 'web-ingress', namespace: ns },
      {
        stagedAction: 'Set',
        podSelector: { matchLabels: { app: 'web' } },
        ingress: [
          {
            from: [
              {
                podSelector: {
                  matchExpressions: [{ key: 'role', operator: 'In', values: ['frontend'] }],
                },
                namespaceSelector: { matchLabels: { team: 'a' } },
              },
              { ipBlock: { cidr: '198.18.0.0/15', except: ['198.18.0.0/24'] } },
            ],
            ports: [
              { protocol: 'TCP', port: 8080, endPort: 8090 },
              { protocol: 'UDP', port: 'dns' },
            ],
          },
        ],
        egress: [{ to: [{ podSelector: {} }], ports: [{ port: 53 }] }],
        policyTypes: ['Ingress', 'Egress'],
      },
    ),
    v1(
      'StagedNetworkPolicy',
      { name: 'allow-api-next', namespace: ns },
      { stagedAction: 'Learn', ...networkPolicySpec() },
    ),
    v1('Tier', { name: 'security' }, { order: 100, defaultAction: 'Deny' }),
  ];
}

/**
 * Objects a CRD must change or refuse, one rule each: an unknown field and a null in an optional
 * field (pruned), a wrong type, a missing required field, a null list item, a fractional port, and
 * BlockAffinity's `deleted` as a boolean where crd.projectcalico.org/v1 has a string (refused).
 * `admitObject` predicts the outcome; the integration test holds the prediction against a real
 * kube-apiserver.
 */
export function crdProbes(): CrdObject[] {
  const v1 = (kind: string, name: string, spec: Record<string, unknown>, namespace?: string): CrdObject => ({
    apiVersion: CRD_API_VERSION,
    kind,
    metadata: namespace ? { name, namespace } : { name },
    spec,
  });
  const block = (extra: Record<string, unknown>) => ({
    cidr: '198.19.1.0/30',
    allocations: [null, null, null, null],
    unallocated: [0, 1, 2, 3],
    attributes: [],
    strictAffinity: false,
    ...extra,
  });
  return [
    v1('IPPool', 'probe-unknown-field', {
      cidr: '198.19.2.0/24',
      futureField: 'x',
      ipip: { enabled: true, mode: 'always', extra: 1 },
    }),
    v1('IPAMBlock', 'probe-null-optional', block({ sequenceNumberForAllocation: null })),
    v1('IPAMBlock', 'probe-null-required', block({ attributes: null })),
    v1('IPPool', 'probe-wrong-type', { cidr: '198.19.3.0/24', blockSize: '26' }),
    v1('IPPool', 'probe-missing-required', { blockSize: 26 }),
    v1('NetworkSet', 'probe-null-item', { nets: ['198.19.4.0/24', null] }, CRD_EXAMPLE_NAMESPACE),
    v1('GlobalNetworkPolicy', 'probe-fractional-port', {
      ingress: [{ action: 'Allow', protocol: 'TCP', destination: { ports: [80.5] } }],
    }),
    v1('BlockAffinity', 'probe-boolean-deleted', {
      state: 'confirmed',
      node: 'node-1',
      cidr: '198.19.0.0/26',
      deleted: false,
    }),
  ];
}
