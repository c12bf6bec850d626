/**
 * @calico-ts/operator: the calculations of tigera-operator (render, Installation checks, status,
 * CRDs), for the manifest script and tests; `main.ts` is the program.
 */
export { baseFromManifest, type CalicoBase } from './base.js';
export { certificateObjects } from './certs.js';
export { operatorCrds } from './crds.js';
export { componentImage, VERSION } from './images.js';
export { type ResolvedInstallation, resolveInstallation } from './installation.js';
export { operatorObjects } from './operator-manifest.js';
export { type ClusterFacts, poolResource, type Rendered, render } from './render.js';
export { expectedTyphaReplicas } from './typha-scale.js';
export { issue, makeCa } from './x509.js';
