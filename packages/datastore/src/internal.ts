/**
 * `@calico-ts/datastore/internal`: what the sibling `@calico-ts/*` packages use and users do not
 * need. No stability promise: it changes with the packages that import it, in the same release.
 */
export { parseJsonExact } from './go-json.js';
export { blockKey, decodeAffinity, decodeBlock, encodeBlock, handleKey, IPAM_ROOT } from './ipam-store.js';
export { ENDPOINT_SLICES_PREFIX, NODES_PREFIX, PODS_PREFIX, SERVICES_PREFIX } from './kube/object-keys.js';
export { kvJson } from './kv/parsed-kv.js';
export { decodeResource, encodeResource } from './resource-codec.js';
