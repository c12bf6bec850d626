/**
 * @calico-ts/apiserver: calico-apiserver as a library. `startApiServer` runs the server (tests,
 * embedding); the RBAC its service account needs is `apiServerRbac`; `main.ts` is the program.
 */

export { API_SERVER_ROLE, apiServerRbac } from './rbac.js';
export { type ServedResource, servedResources } from './resources.js';
export {
  type ApiServerOptions,
  type Delegation,
  type RunningApiServer,
  startApiServer,
  VERSION,
} from './server.js';
