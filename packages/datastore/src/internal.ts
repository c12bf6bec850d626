/**
 * `@calico-ts/datastore/internal`: what the sibling `@calico-ts/*` packages use and users do not
 * need. No stability promise: it changes with the packages that import it, in the same release.
 */
export { parseJsonExact } from './go-json.js';
export {
  affinityKey,
  affinityPrefix,
  blockData,
  blockKey,
  blockPrefix,
  checkKeySegment,
  cidrOfBlockKey,
  decodeAffinity,
  decodeBlock,
  decodeConfig,
  decodeHandle,
  encodeAffinity,
  encodeBlock,
  encodeConfig,
  encodeHandle,
  handleKey,
  IPAM_BLOCK_ROOT,
  IPAM_CONFIG_KEY,
  IPAM_HANDLE_ROOT,
  IPAM_ROOT,
  isAffinityKey,
  isBlockKey,
  isHandleKey,
} from './ipam-records.js';
export { locateKey } from './kube/kv-mapping.js';
export { ENDPOINT_SLICES_PREFIX, NODES_PREFIX, PODS_PREFIX, SERVICES_PREFIX } from './kube/object-keys.js';
export { kvJson } from './kv/parsed-kv.js';
export { PushStream } from './kv/push-stream.js';
export { decodeResource, encodeResource } from './resource-codec.js';
export { parseResourceKey, resourceKey, resourcePrefix } from './resource-keys.js';
