/**
 * `@calico-ts/netlinux/internal`: what the sibling `@calico-ts/*` packages use and users do not
 * need. No stability promise: it changes with the packages that import it, in the same release.
 */
export { linkOpArgs } from './ip-commands.js';
