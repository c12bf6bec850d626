/**
 * One valid projectcalico.org/v3 document of every kind calicoctl writes (ClusterInformation is
 * read-only), with enough fields set that a round trip would show a lost or reordered field.
 */
export const SAMPLE_DOCUMENTS = `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a, labels: {zone: a}}
spec: {cidr: 198.19.0.0/16, ipipMode: CrossSubnet, natOutgoing: true, blockSize: 24}
---
apiVersion: projectcalico.org/v3
kind: IPReservation
metadata: {name: reserved}
spec: {reservedCIDRs: [198.19.0.0/28, 198.19.1.1]}
---
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: default}
spec: {asNumber: 64513, nodeToNodeMeshEnabled: false, logSeverityScreen: Info, serviceClusterIPs: [{cidr: 198.18.128.0/20}]}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: rack-tor}
spec: {peerIP: 198.18.0.254, asNumber: 64600, nodeSelector: rack == 'r1'}
---
apiVersion: projectcalico.org/v3
kind: BGPFilter
metadata: {name: only-pods}
spec:
  exportV4: [{action: Accept, matchOperator: In, cidr: 198.19.0.0/16}]
---
apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: default}
spec: {logSeverityScreen: Warning, reportingInterval: 30s, ipipEnabled: true}
---
apiVersion: projectcalico.org/v3
kind: KubeControllersConfiguration
metadata: {name: default}
spec: {controllers: {node: {reconcilerPeriod: 5m}}}
---
apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: security}
spec: {order: 100, defaultAction: Deny}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: allow-dns}
spec:
  order: 10
  selector: all()
  types: [Egress]
  egress:
  - action: Allow
    protocol: UDP
    destination: {ports: [53], selector: k8s-app == 'kube-dns'}
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: web, namespace: prod}
spec:
  selector: app == 'web'
  ingress:
  - action: Allow
    protocol: TCP
    source: {selector: role == 'frontend'}
    destination: {ports: [80, '8000:8080']}
---
apiVersion: projectcalico.org/v3
kind: StagedNetworkPolicy
metadata: {name: web-next, namespace: prod}
spec:
  stagedAction: Set
  tier: security
  order: 20
  selector: app == 'web'
  ingress:
  - action: Deny
    protocol: TCP
    destination: {ports: [22]}
---
apiVersion: projectcalico.org/v3
kind: StagedGlobalNetworkPolicy
metadata: {name: retire-dns}
spec: {stagedAction: Delete, tier: security}
---
apiVersion: projectcalico.org/v3
kind: StagedKubernetesNetworkPolicy
metadata: {name: db, namespace: prod}
spec:
  podSelector: {matchLabels: {role: db}, matchExpressions: [{key: tier, operator: In, values: [data]}]}
  policyTypes: [Ingress]
  ingress:
  - from: [{namespaceSelector: {matchLabels: {team: a}}}]
    ports: [{protocol: TCP, port: 5432}, {port: metrics}]
---
apiVersion: projectcalico.org/v3
kind: CalicoNodeStatus
metadata: {name: node-1-status}
spec: {node: node-1, classes: [Agent, BGP], updatePeriodSeconds: 30}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkSet
metadata: {name: partners, labels: {role: partner}}
spec: {nets: [198.18.10.0/24, 198.18.11.0/24]}
---
apiVersion: projectcalico.org/v3
kind: NetworkSet
metadata: {name: office, namespace: prod}
spec: {nets: [198.18.20.0/24]}
---
apiVersion: projectcalico.org/v3
kind: HostEndpoint
metadata: {name: node-1-eth0, labels: {role: host}}
spec: {node: node-1, interfaceName: eth0, expectedIPs: [198.18.0.1], profiles: [kns.prod]}
---
apiVersion: projectcalico.org/v3
kind: Profile
metadata: {name: kns.prod}
spec: {labelsToApply: {pcns.projectcalico.org/name: prod}, ingress: [{action: Allow}], egress: [{action: Allow}]}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-1}
spec: {bgp: {ipv4Address: 198.18.0.1/24, asNumber: 64513}, orchRefs: [{nodeName: node-1, orchestrator: k8s}]}
---
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata:
  name: node--1-k8s-web--1-eth0
  namespace: prod
  labels: {app: web, projectcalico.org/namespace: prod, projectcalico.org/orchestrator: k8s}
spec:
  orchestrator: k8s
  node: node-1
  pod: web-1
  endpoint: eth0
  containerID: abc123
  interfaceName: cali0123456789a
  ipNetworks: [198.19.0.5/32]
  profiles: [kns.prod]
`;

/** The kinds in SAMPLE_DOCUMENTS, with their names (and namespaces), in order. */
export const SAMPLE_RESOURCES: readonly { kind: string; name: string; namespace?: string }[] = [
  { kind: 'IPPool', name: 'pool-a' },
  { kind: 'IPReservation', name: 'reserved' },
  { kind: 'BGPConfiguration', name: 'default' },
  { kind: 'BGPPeer', name: 'rack-tor' },
  { kind: 'BGPFilter', name: 'only-pods' },
  { kind: 'FelixConfiguration', name: 'default' },
  { kind: 'KubeControllersConfiguration', name: 'default' },
  { kind: 'Tier', name: 'security' },
  { kind: 'GlobalNetworkPolicy', name: 'allow-dns' },
  { kind: 'NetworkPolicy', name: 'web', namespace: 'prod' },
  { kind: 'StagedNetworkPolicy', name: 'web-next', namespace: 'prod' },
  { kind: 'StagedGlobalNetworkPolicy', name: 'retire-dns' },
  { kind: 'StagedKubernetesNetworkPolicy', name: 'db', namespace: 'prod' },
  { kind: 'CalicoNodeStatus', name: 'node-1-status' },
  { kind: 'GlobalNetworkSet', name: 'partners' },
  { kind: 'NetworkSet', name: 'office', namespace: 'prod' },
  { kind: 'HostEndpoint', name: 'node-1-eth0' },
  { kind: 'Profile', name: 'kns.prod' },
  { kind: 'Node', name: 'node-1' },
  { kind: 'WorkloadEndpoint', name: 'node--1-k8s-web--1-eth0', namespace: 'prod' },
];
