export { BirdControlClient, type BirdControlClientOptions } from './bird/bird-control-client.js';
export {
  type ApplyOutcome,
  type BirdConfigSet,
  type BirdLogger,
  type BirdLogLevel,
  BirdSupervisor,
  type BirdSupervisorOptions,
  type BirdSupervisorStatus,
} from './bird/bird-supervisor.js';
export {
  type BirdReply,
  type BirdStatus,
  type ConfigureResult,
  type ProtocolRow,
  parseConfigure,
  parseProtocols,
  parseReplies,
  parseRoutes,
  parseStatus,
  type ReplyLine,
  ReplySplitter,
  type RouteRow,
} from './bird/control-protocol.js';
export {
  type AffinitySource,
  BirdBridge,
  type BirdBridgeOptions,
  type BirdConfigTarget,
  nodeAffinitySource,
} from './bridge.js';
export * from './errors.js';
export type { AffineBlock, BgpInput, IPFamily } from './render/bgp-input.js';
export {
  asNumberValue,
  type BirdModel,
  type BirdPeer,
  type BirdPeerKind,
  type CommunityRule,
  DEFAULT_AS_NUMBER,
  deriveBirdModel,
  hashRouterId,
  type PoolKernelRule,
  type PoolRule,
  peerName,
} from './render/bgp-model.js';
export { type BirdConfigFiles, birdFileNames, renderBirdConfig } from './render/bird-config-renderer.js';
export { durationSeconds } from './render/go-duration.js';
export { type SecretRef, secretKey, secretRefsOf } from './render/secret-refs.js';
export { MemorySecretProvider, type SecretProvider } from './secret-provider.js';
