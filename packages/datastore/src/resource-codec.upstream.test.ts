/**
 * The exact bytes stored for one representative object of every kind, each written here by hand in
 * the order and form upstream's Go structs give them (`api/pkg/apis/projectcalico/v3/*.go`,
 * `libcalico-go/lib/apis/internalapi/*.go`): field order, which empty fields Go leaves out, which it
 * always writes, and the value forms of Duration, Port, Protocol and ASNumber. Inputs are given in
 * a scrambled order and in the loose forms users write, and go through the write path's validation
 * and defaulting first, as a datastore write does.
 */
import { KIND_NAMES, type Kind, type Resource, validateResource } from '@calico-ts/api';
import { describe, expect, it } from 'vitest';
import { decodeResource, prepareResource, withRevision } from './resource-codec.js';
import { resourceKey } from './resource-keys.js';

const UID = '2b6c4a3e-1f0d-4c1e-9a53-4b6f7f0c8e11';
const TS = '2026-01-02T03:04:05Z';
const META = `"uid":"${UID}","creationTimestamp":"${TS}"`;

/** What a create stores for `doc`: validated and defaulted, stamped, encoded. */
function stored(kind: Kind, metadata: Record<string, unknown>, spec?: unknown, extra: object = {}): string {
  const r = validateResource({ apiVersion: 'projectcalico.org/v3', kind, metadata, spec, ...extra });
  if (!r.ok) throw new Error(`invalid sample: ${JSON.stringify(r.errors)}`);
  const v = r.value;
  const prepared = prepareResource({
    ...v,
    metadata: { ...v.metadata, uid: UID, creationTimestamp: TS },
  } as Resource);
  // What a read of these bytes decodes to is what the write answered with.
  const name = v.metadata.name;
  const namespace = v.metadata.namespace;
  const kv = {
    key: resourceKey(kind, name, namespace),
    value: prepared.text,
    modRevision: '9',
    createRevision: '9',
  };
  const parts = namespace === undefined ? { kind, name } : { kind, name, namespace };
  expect(decodeResource(kv, parts)).toEqual(withRevision(prepared.resource, '9'));
  return prepared.text;
}

const head = (kind: string, meta: string) =>
  `{"kind":"${kind}","apiVersion":"projectcalico.org/v3","metadata":{${meta}}`;

describe('stored value of every kind, in upstream Go field order and form', () => {
  const covered = new Set<string>();
  const cases: Array<[Kind, () => void]> = [
    [
      'IPPool',
      () => {
        const text = stored(
          'IPPool',
          { labels: { zone: 'b', app: 'x' }, name: 'pool-a' },
          {
            allowedUses: ['Workload', 'Tunnel'],
            nodeSelector: 'all()',
            natOutgoing: true,
            disabled: false,
            disableBGPExport: false,
            vxlanMode: 'Always',
            cidr: '198.19.0.0/16',
          },
        );
        // disabled/disableBGPExport are Go bools with omitempty: false is not stored.
        expect(text).toBe(
          `${head('IPPool', `"name":"pool-a",${META},"labels":{"app":"x","zone":"b"}`)},` +
            '"spec":{"cidr":"198.19.0.0/16","vxlanMode":"Always","ipipMode":"Never","natOutgoing":true,' +
            '"blockSize":26,"nodeSelector":"all()","allowedUses":["Workload","Tunnel"],"assignmentMode":"Automatic"}}',
        );
      },
    ],
    [
      'IPReservation',
      () => {
        expect(
          stored('IPReservation', { name: 'r' }, { reservedCIDRs: ['198.19.0.0/28', '198.19.1.7'] }),
        ).toBe(
          `${head('IPReservation', `"name":"r",${META}`)},"spec":{"reservedCIDRs":["198.19.0.0/28","198.19.1.7"]}}`,
        );
      },
    ],
    [
      'BGPConfiguration',
      () => {
        const text = stored(
          'BGPConfiguration',
          { name: 'default' },
          {
            programClusterRoutes: 'Enabled',
            bindMode: 'NodeIP',
            nodeMeshMaxRestartTime: '90s',
            listenPort: 1790,
            serviceClusterIPs: [{ cidr: '198.18.96.0/20' }],
            asNumber: '1.10',
            nodeToNodeMeshEnabled: true,
            logSeverityScreen: 'Debug',
          },
        );
        // No CRD defaults (logSeverityScreen, serviceLoadBalancerAggregation) in etcd mode;
        // ASNumber "1.10" is stored as the number 65546, the Duration "90s" as "1m30s".
        expect(text).toBe(
          `${head('BGPConfiguration', `"name":"default",${META}`)},"spec":{"logSeverityScreen":"Debug",` +
            '"nodeToNodeMeshEnabled":true,"asNumber":65546,"serviceClusterIPs":[{"cidr":"198.18.96.0/20"}],' +
            '"listenPort":1790,"nodeMeshMaxRestartTime":"1m30s","bindMode":"NodeIP","programClusterRoutes":"Enabled"}}',
        );
      },
    ],
    [
      'BGPPeer',
      () => {
        const text = stored(
          'BGPPeer',
          { name: 'peer-a' },
          {
            reversePeering: 'Manual',
            filters: ['export-none'],
            keepaliveTime: '10s',
            maxRestartTime: '2m',
            sourceAddress: 'None',
            password: { secretKeyRef: { key: 'pw', name: 'bgp-secrets' } },
            keepOriginalNextHop: false,
            localASNumber: '64512',
            asNumber: 64513,
            peerIP: '198.18.0.1:179',
            node: 'node-a',
          },
        );
        expect(text).toBe(
          `${head('BGPPeer', `"name":"peer-a",${META}`)},"spec":{"node":"node-a","peerIP":"198.18.0.1:179",` +
            '"asNumber":64513,"localASNumber":64512,"password":{"secretKeyRef":{"name":"bgp-secrets","key":"pw"}},' +
            '"sourceAddress":"None","maxRestartTime":"2m0s","keepaliveTime":"10s","filters":["export-none"],' +
            '"reversePeering":"Manual"}}',
        );
      },
    ],
    [
      'BGPFilter',
      () => {
        const text = stored(
          'BGPFilter',
          { name: 'f' },
          {
            importV4: [{ action: 'Reject', interface: 'eth*' }],
            exportV4: [
              {
                operations: [{ prependASPath: { prefix: ['1.1'] } }],
                action: 'Accept',
                priority: 512,
                asPathPrefix: ['1.1', 65000],
                prefixLength: { max: 28, min: 24 },
                matchOperator: 'In',
                cidr: '198.19.0.0/16',
              },
            ],
          },
        );
        expect(text).toBe(
          `${head('BGPFilter', `"name":"f",${META}`)},"spec":{"exportV4":[{"cidr":"198.19.0.0/16",` +
            '"prefixLength":{"min":24,"max":28},"matchOperator":"In","asPathPrefix":[65537,65000],"priority":512,' +
            '"action":"Accept","operations":[{"prependASPath":{"prefix":[65537]}}]}],' +
            '"importV4":[{"interface":"eth*","action":"Reject"}]}}',
        );
      },
    ],
    [
      'ClusterInformation',
      () => {
        const text = stored(
          'ClusterInformation',
          { name: 'default' },
          {
            variant: 'Calico',
            datastoreReady: false,
            calicoVersion: 'v3.32.1',
            clusterType: 'k8s,bgp',
            clusterGUID: '0e5fb0b3a2c94f3e8a2d6f1c9b7e4d21',
          },
        );
        // datastoreReady is a *bool: false is stored.
        expect(text).toBe(
          `${head('ClusterInformation', `"name":"default",${META}`)},"spec":{"clusterGUID":"0e5fb0b3a2c94f3e8a2d6f1c9b7e4d21",` +
            '"clusterType":"k8s,bgp","calicoVersion":"v3.32.1","datastoreReady":false,"variant":"Calico"}}',
        );
      },
    ],
    [
      'FelixConfiguration',
      () => {
        const text = stored(
          'FelixConfiguration',
          { name: 'default' },
          {
            wireguardEnabled: false,
            bpfLogFilters: { weps: 'udp', all: 'tcp port 80' },
            externalNodesList: [],
            kubeNodePortRanges: ['30000:32767', '8080'],
            failsafeInboundHostPorts: [
              { port: 22, protocol: 'TCP' },
              { net: '198.18.0.0/24', port: 179 },
            ],
            healthTimeoutOverrides: [{ timeout: '30s', name: 'CalculationGraph' }],
            reportingInterval: '90s',
            logSeverityScreen: 'Info',
            interfacePrefix: '',
            ipv6Support: false,
          },
        );
        // Pointers keep false and [] (an empty failsafe list means "none"); a Go string with
        // omitempty drops ""; bpfLogLevel has no omitempty and is always stored.
        expect(text).toBe(
          `${head('FelixConfiguration', `"name":"default",${META}`)},"spec":{"ipv6Support":false,` +
            '"logSeverityScreen":"Info","reportingInterval":"1m30s",' +
            '"healthTimeoutOverrides":[{"name":"CalculationGraph","timeout":"30s"}],' +
            '"failsafeInboundHostPorts":[{"protocol":"TCP","port":22},{"port":179,"net":"198.18.0.0/24"}],' +
            '"kubeNodePortRanges":["30000:32767",8080],"externalNodesList":[],"bpfLogLevel":"",' +
            '"bpfLogFilters":{"all":"tcp port 80","weps":"udp"},"bpfConnectTimeLoadBalancing":"TCP",' +
            '"bpfHostNetworkedNATWithoutCTLB":"Enabled","wireguardEnabled":false,"floatingIPs":"Disabled"}}',
        );
      },
    ],
    [
      'GlobalNetworkPolicy',
      () => {
        const text = stored(
          'GlobalNetworkPolicy',
          { name: 'allow-dns' },
          {
            doNotTrack: false,
            applyOnForward: false,
            selector: 'role == "web"',
            egress: [
              { destination: { ports: ['53', '8000:8000', '8080:8090'] }, protocol: '17', action: 'Allow' },
            ],
            ingress: [
              {
                destination: { notNets: ['198.18.9.0/24'], selector: 'a == "b"', nets: ['198.18.0.0/16'] },
                source: {},
                notProtocol: 'TCP',
                icmp: { code: 0, type: 8 },
                protocol: 'ICMP',
                action: 'Allow',
              },
            ],
            order: 10,
          },
        );
        // The default tier is written into a policy given none, as upstream v3.32 stores it (and its
        // label); an empty source is left out
        // (omitzero); "17" is stored as the protocol number, "53" and "8000:8000" as port numbers.
        expect(text).toBe(
          `${head(
            'GlobalNetworkPolicy',
            `"name":"allow-dns",${META},"labels":{"projectcalico.org/tier":"default"},` +
              '"annotations":{"projectcalico.org/metadata":"{\\"name\\":\\"allow-dns\\"}"}',
          )},"spec":{"tier":"default","order":10,"ingress":[{"action":"Allow","protocol":"ICMP","icmp":{"type":8,"code":0},` +
            '"notProtocol":"TCP","destination":{"nets":["198.18.0.0/16"],"selector":"a == \\"b\\"",' +
            '"notNets":["198.18.9.0/24"]}}],"egress":[{"action":"Allow","protocol":17,' +
            '"destination":{"ports":[53,8000,"8080:8090"]}}],"selector":"role == \\"web\\"",' +
            '"types":["Ingress","Egress"]}}',
        );
      },
    ],
    [
      'NetworkPolicy',
      () => {
        const text = stored(
          'NetworkPolicy',
          { namespace: 'prod', name: 'db-egress', annotations: { owner: 'team-a' } },
          {
            performanceHints: ['AssumeNeededOnEveryNode'],
            serviceAccountSelector: 'has(sa)',
            selector: "app == 'db'",
            egress: [{ destination: { services: { namespace: 'prod', name: 'api' } }, action: 'Allow' }],
            tier: 'security',
          },
        );
        expect(text).toBe(
          `${head(
            'NetworkPolicy',
            `"name":"db-egress","namespace":"prod",${META},"labels":{"projectcalico.org/tier":"security"},` +
              '"annotations":{"owner":"team-a","projectcalico.org/metadata":"{\\"name\\":\\"db-egress\\"}"}',
          )},"spec":{"tier":"security","egress":[{"action":"Allow","destination":{"services":{"name":"api",` +
            `"namespace":"prod"}}}],"selector":"app == 'db'","types":["Egress"],"serviceAccountSelector":"has(sa)",` +
            '"performanceHints":["AssumeNeededOnEveryNode"]}}',
        );
      },
    ],
    [
      'StagedNetworkPolicy',
      () => {
        const text = stored(
          'StagedNetworkPolicy',
          { namespace: 'prod', name: 'allow-6379' },
          {
            types: ['Ingress'],
            ingress: [{ destination: { ports: ['6379'] }, protocol: 'TCP', action: 'Allow' }],
            selector: "role == 'db'",
            tier: 'security',
            stagedAction: 'Set',
          },
        );
        // stagedAction first, then the NetworkPolicy fields in their order; named like a policy.
        expect(text).toBe(
          `${head(
            'StagedNetworkPolicy',
            `"name":"allow-6379","namespace":"prod",${META},"labels":{"projectcalico.org/tier":"security"},` +
              '"annotations":{"projectcalico.org/metadata":"{\\"name\\":\\"allow-6379\\"}"}',
          )},"spec":{"stagedAction":"Set","tier":"security","ingress":[{"action":"Allow","protocol":"TCP",` +
            `"destination":{"ports":[6379]}}],"selector":"role == 'db'","types":["Ingress"]}}`,
        );
        // A staged removal names only the tier (default when it gives none): no types are stored.
        expect(
          stored('StagedNetworkPolicy', { namespace: 'prod', name: 'old' }, { stagedAction: 'Delete' }),
        ).toBe(
          `${head(
            'StagedNetworkPolicy',
            `"name":"old","namespace":"prod",${META},"labels":{"projectcalico.org/tier":"default"},` +
              '"annotations":{"projectcalico.org/metadata":"{\\"name\\":\\"old\\"}"}',
          )},"spec":{"stagedAction":"Delete","tier":"default"}}`,
        );
      },
    ],
    [
      'StagedGlobalNetworkPolicy',
      () => {
        const text = stored(
          'StagedGlobalNetworkPolicy',
          { name: 'deny-egress' },
          { namespaceSelector: 'has(env)', egress: [{ action: 'Deny' }], applyOnForward: true, order: 5 },
        );
        expect(text).toBe(
          `${head(
            'StagedGlobalNetworkPolicy',
            `"name":"deny-egress",${META},"labels":{"projectcalico.org/tier":"default"},` +
              '"annotations":{"projectcalico.org/metadata":"{\\"name\\":\\"deny-egress\\"}"}',
          )},"spec":{"tier":"default","order":5,"egress":[{"action":"Deny"}],"types":["Egress"],"applyOnForward":true,` +
            '"namespaceSelector":"has(env)"}}',
        );
      },
    ],
    [
      'StagedKubernetesNetworkPolicy',
      () => {
        const text = stored(
          'StagedKubernetesNetworkPolicy',
          { namespace: 'prod', name: 'db' },
          {
            policyTypes: ['Ingress'],
            ingress: [
              {
                from: [{ ipBlock: { except: ['172.17.1.0/24'], cidr: '172.17.0.0/16' } }],
                ports: [{ port: 6379, protocol: 'TCP' }],
              },
            ],
          },
        );
        // podSelector is a Go struct value: stored as {} even when unset; no policy-name annotation.
        expect(text).toBe(
          `${head('StagedKubernetesNetworkPolicy', `"name":"db","namespace":"prod",${META}`)},"spec":{` +
            '"podSelector":{},"ingress":[{"ports":[{"protocol":"TCP","port":6379}],"from":[{"ipBlock":' +
            '{"cidr":"172.17.0.0/16","except":["172.17.1.0/24"]}}]}],"policyTypes":["Ingress"]}}',
        );
      },
    ],
    [
      'CalicoNodeStatus',
      () => {
        // The status is a Go struct value: stored zeroed before calico-node first reports.
        expect(
          stored(
            'CalicoNodeStatus',
            { name: 'n1-status' },
            { updatePeriodSeconds: 10, classes: ['BGP', 'Agent'], node: 'n1' },
          ),
        ).toBe(
          `${head('CalicoNodeStatus', `"name":"n1-status",${META}`)},"spec":{"node":"n1","classes":["BGP","Agent"],` +
            '"updatePeriodSeconds":10},"status":{"lastUpdated":null,"agent":{"birdV4":{},"birdV6":{}},' +
            '"bgp":{"numberEstablishedV4":0,"numberNotEstablishedV4":0,"numberEstablishedV6":0,' +
            '"numberNotEstablishedV6":0},"routes":{}}}',
        );
        const reported = stored(
          'CalicoNodeStatus',
          { name: 'n1-status' },
          { node: 'n1', classes: ['Routes'], updatePeriodSeconds: 0 },
          {
            status: {
              routes: {
                routesV4: [{ destination: '198.19.1.0/26', type: 'FIB', interface: 'vxlan.calico' }],
              },
              lastUpdated: '2026-01-02T04:04:05+01:00',
            },
          },
        );
        expect(reported).toBe(
          `${head('CalicoNodeStatus', `"name":"n1-status",${META}`)},"spec":{"node":"n1","classes":["Routes"],` +
            '"updatePeriodSeconds":0},"status":{"lastUpdated":"2026-01-02T03:04:05Z","agent":{"birdV4":{},"birdV6":{}},' +
            '"bgp":{"numberEstablishedV4":0,"numberNotEstablishedV4":0,"numberEstablishedV6":0,' +
            '"numberNotEstablishedV6":0},"routes":{"routesV4":[{"type":"FIB","destination":"198.19.1.0/26",' +
            '"interface":"vxlan.calico","learnedFrom":{}}]}}}',
        );
      },
    ],
    [
      'Tier',
      () => {
        // clientv3 fills an unset order (1,000,000) and default action (Deny).
        expect(stored('Tier', { name: 'app' }, {})).toBe(
          `${head('Tier', `"name":"app",${META}`)},"spec":{"order":1000000,"defaultAction":"Deny"}}`,
        );
      },
    ],
    [
      'Profile',
      () => {
        const text = stored(
          'Profile',
          { name: 'kns.prod' },
          {
            labelsToApply: { 'pcns.b': '2', 'pcns.a': '1' },
            egress: [{ action: 'Allow' }],
            ingress: [{ source: {}, destination: {}, action: 'Allow' }],
          },
        );
        expect(text).toBe(
          `${head('Profile', `"name":"kns.prod",${META}`)},"spec":{"ingress":[{"action":"Allow"}],` +
            '"egress":[{"action":"Allow"}],"labelsToApply":{"pcns.a":"1","pcns.b":"2"}}}',
        );
      },
    ],
    [
      'HostEndpoint',
      () => {
        const text = stored(
          'HostEndpoint',
          { name: 'node-a-eth0', labels: { role: 'edge' } },
          {
            ports: [{ port: 8080, name: 'http', protocol: 'TCP' }],
            profiles: ['edge'],
            expectedIPs: ['198.18.0.11'],
            interfaceName: 'eth0',
            node: 'node-a',
          },
        );
        expect(text).toBe(
          `${head('HostEndpoint', `"name":"node-a-eth0",${META},"labels":{"role":"edge"}`)},"spec":{"node":"node-a",` +
            '"interfaceName":"eth0","expectedIPs":["198.18.0.11"],"profiles":["edge"],' +
            '"ports":[{"name":"http","protocol":"TCP","port":8080}]}}',
        );
      },
    ],
    [
      'WorkloadEndpoint',
      () => {
        const text = stored(
          'WorkloadEndpoint',
          { namespace: 'prod', name: 'node--a-k8s-web--0-eth0', labels: { app: 'web' } },
          {
            qosControls: { dscp: '46', egressBandwidth: 0, ingressBandwidth: 1000000 },
            ports: [
              { port: 8080, protocol: 'TCP', name: 'http' },
              { protocol: 'UDP', port: 53, hostPort: 5353 },
            ],
            mac: 'ee:ee:ee:ee:ee:ee',
            interfaceName: 'cali0123456789a',
            profiles: ['kns.prod'],
            ipNetworks: ['198.19.1.5/32'],
            endpoint: 'eth0',
            pod: 'web-0',
            containerID: 'a1b2c3',
            node: 'node-a',
            orchestrator: 'k8s',
          },
        );
        // A workload port has no omitempty upstream: every field is stored, "" or 0 when unset.
        expect(text).toBe(
          `${head(
            'WorkloadEndpoint',
            `"name":"node--a-k8s-web--0-eth0","namespace":"prod",${META},"labels":{"app":"web",` +
              '"projectcalico.org/namespace":"prod","projectcalico.org/orchestrator":"k8s"}',
          )},"spec":{"orchestrator":"k8s","node":"node-a","containerID":"a1b2c3","pod":"web-0","endpoint":"eth0",` +
            '"ipNetworks":["198.19.1.5/32"],"profiles":["kns.prod"],"interfaceName":"cali0123456789a",' +
            '"mac":"ee:ee:ee:ee:ee:ee","ports":[{"name":"http","protocol":"TCP","port":8080,"hostPort":0,"hostIP":""},' +
            '{"name":"","protocol":"UDP","port":53,"hostPort":5353,"hostIP":""}],' +
            '"qosControls":{"ingressBandwidth":1000000,"dscp":46}}}',
        );
      },
    ],
    [
      'Node',
      () => {
        const text = stored(
          'Node',
          { name: 'node-a' },
          {
            orchRefs: [{ orchestrator: 'k8s', nodeName: 'node-a' }],
            addresses: [{ type: 'InternalIP', address: '198.18.0.11' }],
            ipv4VXLANTunnelAddr: '198.19.1.0',
            bgp: { ipv4Address: '198.18.0.11/24', asNumber: '64512' },
          },
        );
        // NodeStatus is a Go struct value: stored as {} even when empty.
        expect(text).toBe(
          `${head('Node', `"name":"node-a",${META}`)},"spec":{"bgp":{"asNumber":64512,"ipv4Address":"198.18.0.11/24"},` +
            '"ipv4VXLANTunnelAddr":"198.19.1.0","orchRefs":[{"nodeName":"node-a","orchestrator":"k8s"}],' +
            '"addresses":[{"address":"198.18.0.11","type":"InternalIP"}]},"status":{}}',
        );
        const withStatus = stored(
          'Node',
          { name: 'node-b' },
          {},
          { status: { podCIDRs: ['198.19.2.0/24'], wireguardPublicKey: 'k=' } },
        );
        expect(withStatus).toBe(
          `${head('Node', `"name":"node-b",${META}`)},"spec":{},` +
            '"status":{"wireguardPublicKey":"k=","podCIDRs":["198.19.2.0/24"]}}',
        );
      },
    ],
    [
      'NetworkSet',
      () => {
        expect(stored('NetworkSet', { namespace: 'prod', name: 'dbs' }, { nets: ['198.18.5.0/24'] })).toBe(
          `${head('NetworkSet', `"name":"dbs","namespace":"prod",${META}`)},"spec":{"nets":["198.18.5.0/24"]}}`,
        );
      },
    ],
    [
      'GlobalNetworkSet',
      () => {
        expect(stored('GlobalNetworkSet', { name: 'threats' }, { nets: [] })).toBe(
          `${head('GlobalNetworkSet', `"name":"threats",${META}`)},"spec":{}}`,
        );
      },
    ],
    [
      'KubeControllersConfiguration',
      () => {
        const text = stored(
          'KubeControllersConfiguration',
          { name: 'default' },
          {
            debugProfilePort: 6060,
            controllers: { loadBalancer: {}, node: { reconcilerPeriod: '300s', syncLabels: 'Enabled' } },
            etcdV3CompactionPeriod: '10m',
            logSeverityScreen: 'Info',
          },
        );
        // clientv3 fills the metrics port, the node leak grace period and assignIPs; the status
        // is a Go struct value, stored as {}.
        expect(text).toBe(
          `${head('KubeControllersConfiguration', `"name":"default",${META}`)},"spec":{"logSeverityScreen":"Info",` +
            '"etcdV3CompactionPeriod":"10m0s","prometheusMetricsPort":9094,"controllers":{"node":{' +
            '"reconcilerPeriod":"5m0s","syncLabels":"Enabled","leakGracePeriod":"15m0s"},' +
            '"loadBalancer":{"assignIPs":"AllServices"}},"debugProfilePort":6060},"status":{}}',
        );
        // `controllers` has no omitempty: stored as {} when unset.
        expect(
          stored('KubeControllersConfiguration', { name: 'default' }, { healthChecks: 'Disabled' }),
        ).toBe(
          `${head('KubeControllersConfiguration', `"name":"default",${META}`)},"spec":{"healthChecks":"Disabled",` +
            '"prometheusMetricsPort":9094,"controllers":{}},"status":{}}',
        );
      },
    ],
  ];

  for (const [kind, run] of cases) {
    covered.add(kind);
    it(kind, run);
  }

  it('covers every kind', () => {
    expect([...covered].sort()).toEqual([...KIND_NAMES].sort());
  });
});

describe('fields upstream drops or rewrites', () => {
  it('drops a status from kinds whose Go type has none, keeps an IPPool status', () => {
    const set = stored('GlobalNetworkSet', { name: 's' }, { nets: ['198.18.0.0/24'] }, { status: { x: 1 } });
    expect(set).not.toContain('status');
    const pool = stored(
      'IPPool',
      { name: 'p' },
      { cidr: '198.19.0.0/24' },
      { status: { conditions: [{ type: 'Allocatable', status: 'True' }] } },
    );
    expect(pool).toMatch(/,"status":\{"conditions":\[\{"type":"Allocatable","status":"True"\}\]\}\}$/);
  });

  it('writes creationTimestamp as null when unset and in UTC whole seconds when given otherwise', () => {
    const r = validateResource({
      apiVersion: 'projectcalico.org/v3',
      kind: 'GlobalNetworkSet',
      metadata: { name: 's', generation: 0 },
      spec: {},
    });
    if (!r.ok) throw new Error('invalid');
    expect(prepareResource(r.value).text).toBe(
      `${head('GlobalNetworkSet', '"name":"s","creationTimestamp":null')},"spec":{}}`,
    );
    const shifted = prepareResource({
      ...r.value,
      metadata: { name: 's', creationTimestamp: '2026-01-02T04:04:05.250+01:00' },
    } as Resource).text;
    expect(shifted).toContain('"creationTimestamp":"2026-01-02T03:04:05Z"');
  });
});
