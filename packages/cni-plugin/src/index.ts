/**
 * `@calico-ts/cni-plugin`: the `calico` and `calico-ipam` CNI plugins. The executables are built
 * into bin/ (see scripts/bundle.mjs); this module exposes the pieces for embedding and testing.
 */
export * from './errors.js';
export type { HostInfo, PluginContext } from './handlers/context.js';
export type * from './io/backend.js';
export * from './io/dataplane.js';
export { type DelegateRunner, ExecDelegateRunner } from './io/delegate.js';
export { LinuxDataplane, type NetOps } from './io/linux-dataplane.js';
export { createLogger, type Logger } from './io/logger.js';
export * from './naming.js';
export { type PluginEffects, type PluginOutput, type Program, programFromPath, runPlugin } from './plugin.js';
export * from './spec/cni-args.js';
export * from './spec/env.js';
export * from './spec/error.js';
export * from './spec/netconf.js';
export * from './spec/result.js';
export * from './spec/versions.js';
export * from './workload.js';
