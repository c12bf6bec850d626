/** Kubernetes-style object metadata as Calico stores it. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  creationTimestamp?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: Array<{
    apiVersion: string;
    kind: string;
    name: string;
    uid: string;
    controller?: boolean;
    blockOwnerDeletion?: boolean;
  }>;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
}

/** The envelope every projectcalico.org/v3 object shares. */
export interface ResourceObject<K extends string = string, Spec = unknown> {
  apiVersion: 'projectcalico.org/v3';
  kind: K;
  metadata: ObjectMeta;
  spec: Spec;
  status?: unknown;
}
