/**
 * The flows API's definition (`proto/api.proto`), loaded for @grpc/grpc-js: proto field names,
 * enum values by name, int64 as numbers. Servers and clients (tests, the console's backend, Felix)
 * load it the same way.
 */
import { fileURLToPath } from 'node:url';
import { type GrpcObject, loadPackageDefinition, type ServiceClientConstructor } from '@grpc/grpc-js';
import { loadSync, type PackageDefinition } from '@grpc/proto-loader';

/** Where api.proto lies (beside src/ and dist/ alike). */
export const PROTO_PATH = fileURLToPath(new URL('../proto/api.proto', import.meta.url));

/** How the messages are decoded: what the codec expects. */
export const PROTO_LOADER_OPTIONS = Object.freeze({
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  arrays: true,
});

/** The goldmane package's services. */
export interface GoldmaneGrpc {
  /** Flows: List, Stream, FilterHints. */
  readonly Flows: ServiceClientConstructor;
  /** FlowCollector: Connect. */
  readonly FlowCollector: ServiceClientConstructor;
  /** Statistics: List. */
  readonly Statistics: ServiceClientConstructor;
}

let cached: { definition: PackageDefinition; grpc: GoldmaneGrpc } | undefined;

/** The package definition and its service constructors (loaded once). */
export function loadGoldmaneProto(): { definition: PackageDefinition; grpc: GoldmaneGrpc } {
  if (!cached) {
    const definition = loadSync(PROTO_PATH, { ...PROTO_LOADER_OPTIONS });
    const pkg = (loadPackageDefinition(definition) as GrpcObject).goldmane as unknown as GoldmaneGrpc;
    cached = { definition, grpc: pkg };
  }
  return cached;
}
