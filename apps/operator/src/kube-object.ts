/**
 * The shape of a Kubernetes object as the operator renders and applies it, and the marks that say
 * the operator made it (pure).
 *
 * Every object the render makes carries the label `app.kubernetes.io/managed-by: tigera-operator`
 * (what the apply loop lists to find what it made and no longer wants) and, when the
 * Installation's uid is known, an ownerReference to it (so deleting the Installation lets
 * Kubernetes' garbage collector remove them too).
 */

export interface ObjectMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  [k: string]: unknown;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [k: string]: unknown;
}

export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'tigera-operator';
export const CALICO_NAMESPACE = 'calico-system';

/** `Kind namespace/name`, the identity the apply loop compares by. */
export function objectKey(o: Pick<KubeObject, 'kind' | 'metadata'>): string {
  return `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;
}

/** A deep copy (the render never changes the base it starts from). */
export function clone<T>(v: T): T {
  return structuredClone(v);
}

/** `o` marked as the operator's: the managed-by label and, with `ownerUid`, the Installation as owner. */
export function markManaged<T extends KubeObject>(o: T, ownerUid?: string): T {
  o.metadata.labels = { ...(o.metadata.labels ?? {}), [MANAGED_BY_LABEL]: MANAGED_BY };
  if (ownerUid)
    o.metadata.ownerReferences = [
      {
        apiVersion: 'operator.tigera.io/v1',
        kind: 'Installation',
        name: 'default',
        uid: ownerUid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ];
  return o;
}
