export {
  decodeFilter,
  decodeFlowUpdate,
  decodeHintsRequest,
  decodeListRequest,
  decodeStreamRequest,
  encodeFlow,
  encodeFlowResult,
  type StreamQuery,
  type Wire,
} from './codec.js';
export { type GoldmaneConfig, goldmaneConfigFromEnv } from './config.js';
export {
  GOLDMANE_ERROR_CODES,
  GoldmaneError,
  type GoldmaneErrorCode,
  invalidArgument,
} from './errors.js';
export {
  EMPTY_FILTER,
  type Filter,
  flowMatches,
  keyMatches,
  type PolicyMatch,
  type StringMatch,
} from './filter.js';
export {
  ACTIONS,
  type Action,
  ENDPOINT_TYPES,
  type EndpointType,
  FILTER_TYPES,
  type FilterType,
  type Flow,
  type FlowKey,
  type FlowResult,
  type FlowStats,
  flowKeyString,
  MATCH_TYPES,
  type MatchType,
  POLICY_KINDS,
  type PolicyHit,
  type PolicyKind,
  type PolicyTrace,
  REPORTERS,
  type Reporter,
  SORT_BYS,
  type SortBy,
} from './flow.js';
export { grpcStatusOf } from './grpc-status.js';
export { GoldmaneMetrics } from './metrics.js';
export { type GoldmaneGrpc, loadGoldmaneProto, PROTO_LOADER_OPTIONS, PROTO_PATH } from './proto.js';
export {
  GoldmaneServer,
  type GoldmaneServerOptions,
  type GoldmaneServerStats,
  type GoldmaneServerTls,
} from './server.js';
export {
  DEFAULT_STORE_OPTIONS,
  FlowStore,
  type FlowStoreOptions,
  type FlowStoreStats,
  type HintsQuery,
  type IngestOutcome,
  type ListMeta,
  type ListQuery,
  type TimeRange,
} from './store.js';
