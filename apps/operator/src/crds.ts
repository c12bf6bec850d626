/**
 * The CustomResourceDefinitions of `operator.tigera.io/v1` this operator serves: Installation,
 * APIServer and TigeraStatus, with upstream's group, names, scope (cluster) and field names
 * (`api/v1/*_types.go`). Pure data; `scripts/manifest.mjs` writes them into
 * deploy/manifests/tigera-operator.yaml.
 *
 * The schema types and validates every field the operator reads, with upstream's enums, so the API
 * server refuses a value the operator could not act on (`kubectl create` prints
 * `spec.calicoNetwork.ipPools[0].encapsulation: Unsupported value: "GRE": supported values: …`);
 * deeper parts it does not read are kept as given (`x-kubernetes-preserve-unknown-fields`). The
 * operator checks the same fields again (installation.ts) before it acts, for objects written
 * before a CRD upgrade. Installation and APIServer must be named `default`, as upstream's operator
 * only acts on that one.
 */
import {
  ALLOWED_USES,
  CNI_TYPES,
  ENCAPSULATIONS,
  IPAM_TYPES,
  LINUX_DATAPLANES,
  PROVIDERS,
} from './installation.js';

type Schema = Record<string, unknown>;

const str = (description?: string): Schema => ({ type: 'string', ...(description ? { description } : {}) });
const oneOf = (values: readonly string[], description: string): Schema => ({
  type: 'string',
  enum: [...values],
  description,
});
const open = (properties: Record<string, Schema>, description: string, extra: Schema = {}): Schema => ({
  type: 'object',
  description,
  'x-kubernetes-preserve-unknown-fields': true,
  properties,
  ...extra,
});

const ipPool = open(
  {
    name: str('The pool name; default default-ipv4-ippool.'),
    cidr: str('The pool CIDR, e.g. 192.168.0.0/16.'),
    encapsulation: oneOf(
      ENCAPSULATIONS,
      'The pool encapsulation; default IPIP (VXLAN when BGP is Disabled).',
    ),
    natOutgoing: oneOf(['Enabled', 'Disabled'], 'NAT of traffic leaving the pool; default Enabled.'),
    nodeSelector: str('Which nodes allocate from the pool; default all().'),
    blockSize: { type: 'integer', format: 'int32', description: 'Prefix length of the blocks; default 26.' },
    disableBGPExport: { type: 'boolean' },
    disableNewAllocations: { type: 'boolean' },
    allowedUses: { type: 'array', items: oneOf(ALLOWED_USES, 'Workload, Tunnel or LoadBalancer.') },
    assignmentMode: oneOf(['Automatic', 'Manual'], 'Automatic or Manual.'),
  },
  'An IP pool the operator creates once.',
  { required: ['cidr'] },
);

const autodetection = open(
  {
    firstFound: { type: 'boolean' },
    kubernetes: oneOf(['NodeInternalIP'], 'The Node object address.'),
    interface: str(),
    skipInterface: str(),
    canReach: str(),
    cidrs: { type: 'array', items: str() },
  },
  'How calico-node finds the node address.',
);

const installationSpec = open(
  {
    variant: oneOf(['Calico', 'TigeraSecureEnterprise'], 'The product; only Calico here.'),
    registry: str('The registry images come from (ends with /).'),
    imagePath: str('The path of every image in the registry.'),
    imagePrefix: str('A prefix of every image name.'),
    imagePullSecrets: { type: 'array', items: open({ name: str() }, 'A pull Secret.') },
    kubernetesProvider: oneOf(
      PROVIDERS,
      'The platform: EKS, GKE, AKS with their defaults; RKE2, TKG, Kind as a plain cluster; OpenShift and DockerEnterprise are refused here.',
    ),
    cni: open(
      {
        type: oneOf(
          CNI_TYPES,
          'The CNI plugin; default from the provider (EKS AmazonVPC, GKE GKE, AKS AzureVNET, else Calico). Another than Calico: Calico polices only.',
        ),
        ipam: open(
          {
            type: oneOf(
              IPAM_TYPES,
              "The IPAM plugin; default the CNI's own (Calico, AmazonVPC, AzureVNET; GKE: HostLocal).",
            ),
          },
          'IPAM.',
        ),
      },
      'The CNI plugin.',
    ),
    azure: open(
      {
        policyMode: oneOf(
          ['Default', 'Manual'],
          'AKS: Default labels calico-system control-plane: "true"; Manual does not.',
        ),
      },
      'AKS options.',
    ),
    calicoNetwork: open(
      {
        bgp: oneOf(['Enabled', 'Disabled'], 'BGP; default Enabled.'),
        mtu: { type: 'integer', format: 'int32', description: 'The pod MTU; default from the host.' },
        linuxDataplane: oneOf(LINUX_DATAPLANES, 'The dataplane; BPF and VPP are refused here.'),
        hostPorts: oneOf(['Enabled', 'Disabled'], 'The portmap CNI plugin; default Enabled.'),
        ipPools: { type: 'array', items: ipPool },
        nodeAddressAutodetectionV4: autodetection,
        nodeAddressAutodetectionV6: autodetection,
      },
      'Calico networking.',
    ),
  },
  'What Calico the operator installs.',
);

const statusOpen: Schema = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };

function crd(
  kind: string,
  plural: string,
  spec: Schema,
  extra: { status?: Schema; columns?: Schema[]; nameRule?: boolean } = {},
): Schema {
  const root: Schema = {
    type: 'object',
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      spec,
      status: extra.status ?? statusOpen,
    },
    ...(extra.nameRule
      ? {
          'x-kubernetes-validations': [
            {
              rule: "self.metadata.name == 'default'",
              message: `${kind} must be named default: the operator acts on that one only`,
            },
          ],
        }
      : {}),
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.operator.tigera.io` },
    spec: {
      group: 'operator.tigera.io',
      names: { kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() },
      scope: 'Cluster',
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {} },
          ...(extra.columns ? { additionalPrinterColumns: extra.columns } : {}),
          schema: { openAPIV3Schema: root },
        },
      ],
    },
  };
}

const condition: Schema = {
  type: 'object',
  required: ['type', 'status', 'lastTransitionTime'],
  properties: {
    type: str('Available, Progressing or Degraded.'),
    status: oneOf(['True', 'False', 'Unknown'], 'True, False or Unknown.'),
    lastTransitionTime: { type: 'string', format: 'date-time' },
    reason: str('A brief reason.'),
    message: str('What a person can do about it.'),
    observedGeneration: { type: 'integer', format: 'int64' },
  },
};

const column = (name: string, type: string, cond: string, field: string, description: string): Schema => ({
  name,
  type,
  jsonPath: `.status.conditions[?(@.type=='${cond}')].${field}`,
  description,
});

export function operatorCrds(): Schema[] {
  return [
    crd('Installation', 'installations', installationSpec, { nameRule: true }),
    crd('APIServer', 'apiservers', open({}, 'The Calico API server (calico-apiserver).'), { nameRule: true }),
    crd(
      'TigeraStatus',
      'tigerastatuses',
      { type: 'object' },
      {
        status: {
          type: 'object',
          properties: { conditions: { type: 'array', items: condition } },
        },
        columns: [
          column('Available', 'string', 'Available', 'status', 'Whether the component running and stable.'),
          column(
            'Progressing',
            'string',
            'Progressing',
            'status',
            'Whether the component is processing changes.',
          ),
          column('Degraded', 'string', 'Degraded', 'status', 'Whether the component is degraded.'),
          column(
            'Since',
            'date',
            'Available',
            'lastTransitionTime',
            "The time the component's Available status last changed.",
          ),
        ],
      },
    ),
  ];
}
