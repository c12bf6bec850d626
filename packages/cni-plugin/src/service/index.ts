/**
 * `@calico-ts/cni-plugin/service`: the node-local plugin service, for a long-running host program
 * (calico-node) to embed. See protocol.ts for what it is and server.ts for how it behaves.
 */
export {
  DEFAULT_SERVICE_SOCKET,
  SERVICE_SOCKET_KEY,
  type ServiceReply,
  type ServiceRequest,
} from './protocol.js';
export { type PluginService, type PluginServiceOptions, startPluginService } from './server.js';
