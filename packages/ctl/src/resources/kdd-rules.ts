/**
 * What calicoctl's writes mean on the Kubernetes datastore (KDD), where some Calico resources are
 * Kubernetes objects seen through Calico (`@calico-ts/datastore` kube/native-mapping.ts):
 *
 *   Node              the Kubernetes Node of the same name: its Calico fields (BGP addresses, AS,
 *                     tunnel addresses, Calico labels) can be written; it is never created or
 *                     deleted through Calico (the kubelet registers it, kubectl deletes it)
 *   Profile           derived from Namespaces (kns.*) and ServiceAccounts (ksa.*): read-only
 *   WorkloadEndpoint  its Pod: written only where the Pod exists
 *   every other kind  a crd.projectcalico.org/v1 object: needs the Calico CRDs installed
 *
 * Each refusal is decided here, before the datastore is asked, and says why and what to do
 * instead; the datastore's own refusals are worded through `kddStoreReason`. Pure calculation.
 */
import { KINDS, type Kind } from '@calico-ts/api';
import { DatastoreError } from '@calico-ts/datastore';

/** A write whose meaning on the Kubernetes datastore `kddRefusal` decides. */
export type KddAction = 'create' | 'apply' | 'replace' | 'delete';

function id(kind: Kind, name: string, namespace?: string): string {
  return KINDS[kind].namespaced && namespace ? `${kind}(${namespace}/${name})` : `${kind}(${name})`;
}

const PROFILE_SOURCES =
  'profiles there are derived from Namespaces (kns.<namespace>) and ServiceAccounts (ksa.<namespace>.<serviceaccount>); change those with kubectl';

/** Why `action` on this resource cannot be done on the Kubernetes datastore, or undefined. */
export function kddRefusal(action: KddAction, kind: Kind, name: string): string | undefined {
  const where = 'in the Kubernetes datastore';
  if (kind === 'Node') {
    if (action === 'create') {
      return `operation create is not supported on Node(${name}) ${where}: a Calico Node there is the Kubernetes Node of the same name, which the kubelet registers; once it exists, set its Calico fields with apply, replace, patch or label`;
    }
    if (action === 'delete') {
      return `operation delete is not supported on Node(${name}) ${where}: delete the Kubernetes Node with kubectl (kubectl delete node ${name})`;
    }
    return undefined;
  }
  if (kind === 'Profile')
    return `operation ${action} is not supported on Profile(${name}) ${where}: ${PROFILE_SOURCES}`;
  return undefined;
}

/** A Node to apply or replace that has no Kubernetes Node (upstream's text, then why). */
export function kddNodeMissing(name: string): string {
  return `resource does not exist: Node(${name}) with error: <nil> (in the Kubernetes datastore a Calico Node is the Kubernetes Node of the same name; kubectl get nodes lists them)`;
}

/**
 * The datastore's reason without the key it names first (`/calico/resources/…: reason`): the
 * error's own, else that of the store error it wraps.
 */
export function kddStoreReason(e: DatastoreError): string {
  for (const x of [e, e.cause]) {
    const m = x instanceof DatastoreError ? /^\/calico\/\S*: (.*)$/s.exec(x.message) : null;
    if (m) return m[1]!;
  }
  return e.message;
}

/**
 * Why a create found nothing to create in: for a WorkloadEndpoint its Pod is missing; for a kind
 * stored as a CRD, the API server does not serve that CRD (a POST to a collection answers 404 only
 * then; a missing namespace is reported by the datastore as such).
 */
export function kddCreateNotFound(e: DatastoreError, kind: Kind, name: string, namespace?: string): string {
  if (kind === 'WorkloadEndpoint') {
    return `cannot create ${id(kind, name, namespace)}: ${kddStoreReason(e)} (in the Kubernetes datastore a WorkloadEndpoint is its Pod)`;
  }
  return `cannot create ${id(kind, name, namespace)}: the Kubernetes API server does not serve ${KINDS[kind].plural}.crd.projectcalico.org; install the Calico CRDs first (kubectl apply -f calico-crds.yaml)`;
}
