/**
 * Where Kubernetes objects are read as they are (Services, EndpointSlices, Pods, Nodes) through the
 * key seam on the Kubernetes datastore: `/kubernetes/<plural>/<namespace>/<name>` → the object's
 * JSON. A tiny module, so importing the prefixes loads nothing else.
 */
export const KUBERNETES_OBJECT_ROOT = '/kubernetes/';
export const SERVICES_PREFIX = `${KUBERNETES_OBJECT_ROOT}services/`;
export const ENDPOINT_SLICES_PREFIX = `${KUBERNETES_OBJECT_ROOT}endpointslices/`;
export const PODS_PREFIX = `${KUBERNETES_OBJECT_ROOT}pods/`;
export const NODES_PREFIX = `${KUBERNETES_OBJECT_ROOT}nodes/`;
