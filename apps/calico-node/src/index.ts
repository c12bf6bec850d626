/**
 * calico-node as a library: the start-up decisions (pure), the start-up sequence, the health
 * checks and the composed node. The executable is bin/calico-node (src/main.ts, bundled).
 */
export * from './autodetect.js';
export * from './bgp-health.js';
export { type Command, parseArgs, parseGoDuration, USAGE } from './cli.js';
export * from './env.js';
export * from './errors.js';
export { listHostInterfaces, reachSource } from './host-network.js';
export { BIRD_HEALTH_REPORTER, CalicoNode, type CalicoNodeOptions, felixEnv } from './node-daemon.js';
export * from './node-resource.js';
export { PROBE_NAMES, type ProbeContext, type ProbeName, runProbes } from './probes.js';
export * from './startup.js';
