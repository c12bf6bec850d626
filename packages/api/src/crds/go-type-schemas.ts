/**
 * CRD schemas of what has no zod schema in `@calico-ts/api`, written from upstream's Go types
 * (`libcalico-go/lib/apis/internalapi`, `api/pkg/apis/projectcalico/v3`) and checked against
 * upstream's CRDs in `libcalico-go/config/crd/`: the IPAM kinds, CalicoNodeStatus, the staged
 * Kubernetes NetworkPolicy, the IPPool status and the IPPool's APIv1 leftovers.
 *
 * `required` lists are upstream's: the Go fields without `omitempty` that upstream marks required.
 *
 * Pure data.
 */
import {
  arr,
  bool,
  int,
  intOrString,
  map,
  nullable,
  obj,
  type StructuralSchema,
  str,
} from './structural-schema.js';

// ---- IPAM (internalapi ipam_block.go, block_affinity.go, ipam_handle.go, ipam_config.go) -----

/**
 * `allocations[i]` is the index into `attributes` of ordinal i, or null when the address is free:
 * the only nullable list items upstream has (added to its CRD by hand, as here).
 */
export const ipamBlockSpecSchema: StructuralSchema = obj(
  {
    cidr: str(),
    affinity: str(),
    affinityClaimTime: str('date-time'),
    allocations: arr(nullable(int())),
    unallocated: arr(int()),
    attributes: arr(
      obj({
        handle_id: str(),
        secondary: map(str()),
        alternate: map(str()),
      }),
    ),
    sequenceNumber: int('int64'),
    sequenceNumberForAllocation: map(int('int64')),
    deleted: bool(),
    strictAffinity: bool(),
  },
  ['allocations', 'attributes', 'cidr', 'strictAffinity', 'unallocated'],
);

/** `deleted` is a string ("true"/"false") in crd.projectcalico.org/v1, for older releases' sake. */
export const blockAffinitySpecSchema: StructuralSchema = obj(
  {
    state: str(),
    node: str(),
    type: str(),
    cidr: str(),
    deleted: str(),
  },
  ['cidr', 'deleted', 'node', 'state'],
);

export const ipamHandleSpecSchema: StructuralSchema = obj(
  {
    handleID: str(),
    block: map(int()),
    deleted: bool(),
  },
  ['block', 'handleID'],
);

export const ipamConfigSpecSchema: StructuralSchema = obj(
  {
    strictAffinity: bool(),
    autoAllocateBlocks: bool(),
    maxBlocksPerHost: int(),
    kubeVirtVMAddressPersistence: str(),
  },
  ['autoAllocateBlocks', 'strictAffinity'],
);

// ---- CalicoNodeStatus (v3 caliconodestatus.go) -----------------------------------------------

export const calicoNodeStatusSpecSchema: StructuralSchema = obj({
  node: str(),
  classes: arr(str()),
  updatePeriodSeconds: int('int32'),
});

const birdStatus = () =>
  obj({
    state: str(),
    version: str(),
    routerID: str(),
    lastBootTime: str(),
    lastReconfigurationTime: str(),
  });
const bgpPeerStatus = () => obj({ peerIP: str(), type: str(), state: str(), since: str() });
const route = () =>
  obj({
    type: str(),
    destination: str(),
    gateway: str(),
    interface: str(),
    learnedFrom: obj({ sourceType: str(), peerIP: str() }),
  });

/** Written by calico-node, which upstream leaves unchecked; every field is kept as it is. */
export const calicoNodeStatusStatusSchema: StructuralSchema = obj({
  lastUpdated: nullable(str('date-time')),
  agent: obj({ birdV4: birdStatus(), birdV6: birdStatus() }),
  bgp: obj(
    {
      numberEstablishedV4: int(),
      numberNotEstablishedV4: int(),
      numberEstablishedV6: int(),
      numberNotEstablishedV6: int(),
      peersV4: arr(bgpPeerStatus()),
      peersV6: arr(bgpPeerStatus()),
    },
    ['numberEstablishedV4', 'numberEstablishedV6', 'numberNotEstablishedV4', 'numberNotEstablishedV6'],
  ),
  routes: obj({ routesV4: arr(route()), routesV6: arr(route()) }),
});

// ---- IPPool ------------------------------------------------------------------------------------

/** A `metav1.Condition`, as controller-gen writes it. */
const condition = () =>
  obj(
    {
      type: str(),
      status: str(),
      observedGeneration: int('int64'),
      lastTransitionTime: str('date-time'),
      reason: str(),
      message: str(),
    },
    ['lastTransitionTime', 'message', 'reason', 'status', 'type'],
  );

/** `IPPoolStatus`: the `Allocatable` condition and any other. */
export const ipPoolStatusSchema: StructuralSchema = obj({ conditions: arr(condition()) });

/**
 * Fields upstream's IPPoolSpec still declares for APIv1 compatibility (`ipip`, `nat-outgoing`).
 * Upstream's validator refuses them on write, but its CRD keeps them, so an object that has them
 * reads back unchanged.
 */
export const ipPoolLegacySpecFields: Readonly<Record<string, StructuralSchema>> = {
  ipip: obj({ enabled: bool(), mode: str() }),
  'nat-outgoing': bool(),
};

// ---- StagedKubernetesNetworkPolicy (v3 stagedkubernetesnetworkpolicy.go) ---------------------

const labelSelector = () =>
  obj({
    matchLabels: map(str()),
    matchExpressions: arr(obj({ key: str(), operator: str(), values: arr(str()) }, ['key', 'operator'])),
  });
const peer = () =>
  obj({
    podSelector: labelSelector(),
    namespaceSelector: labelSelector(),
    ipBlock: obj({ cidr: str(), except: arr(str()) }, ['cidr']),
  });
const port = () => obj({ protocol: str(), port: intOrString(), endPort: int('int32') });

/** `stagedAction` plus a `networking.k8s.io/v1` NetworkPolicySpec. */
export const stagedKubernetesNetworkPolicySpecSchema: StructuralSchema = obj({
  stagedAction: str(),
  podSelector: labelSelector(),
  ingress: arr(obj({ ports: arr(port()), from: arr(peer()) })),
  egress: arr(obj({ ports: arr(port()), to: arr(peer()) })),
  policyTypes: arr(str()),
});
