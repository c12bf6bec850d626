export {
  type AgentSyncerDeps,
  type AgentTyphaConfig,
  addressesFromEndpoints,
  agentSyncer,
  TYPHA_PORT_NAME,
  tlsLoaderOf,
  usesTypha,
} from './agent-syncer.js';
export { TYPHA_CONNECTION, TyphaClient, type TyphaClientOptions, type TyphaClientTls } from './client.js';
export { DEFAULT_TYPHA_PORT, type TyphaConfig, typhaConfigFromEnv } from './config.js';
export { type PeerCertificateLike, type PeerRequirement, peerMismatch, uriSansOf } from './peer-identity.js';
export {
  type ClientMessage,
  decodeClientMessage,
  decodeServerMessage,
  encodeMessage,
  LineSplitter,
  PROTOCOL_VERSION,
  ProtocolError,
  type ServerMessage,
  SYNCER_TYPES,
  type SyncerType,
} from './protocol.js';
export {
  TyphaServer,
  type TyphaServerOptions,
  type TyphaServerStats,
  type TyphaServerTls,
} from './server.js';
export {
  affinityFilter,
  BGP_KINDS,
  BLOCK_AFFINITIES,
  FELIX_KINDS,
  IPAM_BLOCKS,
  KUBE_OBJECT_SOURCES,
  sourcesOf,
  typhaSources,
} from './syncer-sources.js';
