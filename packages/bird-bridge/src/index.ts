/**
 * `@calico-ts/bird-bridge`: BGP for Calico through BIRD 2. `renderBirdConfig` renders bird.cfg from
 * nodes, peers, pools and filters (pure); `BirdBridge` keeps it in step with a datastore;
 * `BirdSupervisor` runs BIRD and reloads it; `BirdControlClient` speaks its control socket.
 */
export { BirdControlClient, type BirdControlClientOptions } from './bird/bird-control-client.js';
export {
  type ApplyOutcome,
  type BirdConfigSet,
  BirdSupervisor,
  type BirdSupervisorOptions,
  type BirdSupervisorStatus,
} from './bird/bird-supervisor.js';
export {
  type BirdStatus,
  type ConfigureResult,
  type ProtocolRow,
  parseConfigure,
  parseProtocols,
  parseRoutes,
  parseStatus,
  type RouteRow,
} from './bird/control-protocol.js';
export {
  type AffinitySource,
  BirdBridge,
  type BirdBridgeOptions,
  type BirdConfigTarget,
  type BridgeSyncer,
  nodeAffinitySource,
} from './bridge.js';
export {
  BIRD_BRIDGE_ERROR_CODES,
  BirdBridgeError,
  type BirdBridgeErrorCode,
  isBirdBridgeError,
} from './errors.js';
export type { AffineBlock, BgpInput, IPFamily } from './render/bgp-input.js';
export { DEFAULT_AS_NUMBER } from './render/bgp-model.js';
export { type BirdConfigFiles, birdFileNames, renderBirdConfig } from './render/bird-config-renderer.js';
export { MemorySecretProvider, type SecretProvider } from './secret-provider.js';
