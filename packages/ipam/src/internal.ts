/**
 * `@calico-ts/ipam/internal`: what the sibling `@calico-ts/*` packages use and users do not
 * need. No stability promise: it changes with the packages that import it, in the same release.
 */
export { allocationsOf, hostOfAffinity, WINDOWS_RESERVED_HANDLE } from './block/allocation-block.js';
export type { AssignmentAttrs } from './block/types.js';
export { type GcState, gcKey, newGcState, planGc } from './check/gc-plan.js';
