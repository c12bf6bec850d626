/**
 * The CNI error object and the one table from our error codes to the numbers the spec defines
 * (pure).
 *
 * Well-known numbers (spec "Well-known Error Codes"): 1 incompatible version, 2 unsupported field,
 * 3 unknown container, 4 invalid environment variables, 5 I/O failure, 6 decode failure, 7 invalid
 * network config, 11 try again later, 50 plugin not available (STATUS), 51 not available with
 * limited connectivity (STATUS). The reference library adds 8 (invalid netns) and 999 (internal).
 * Numbers ≥ 100 are plugin-specific: upstream Calico uses 100 for its command-line flag errors and
 * prints every other plugin error as 999, which we keep so scripts keyed on it still work.
 */
import { CniPluginError, type CniPluginErrorCode, isCniPluginError, messageOf } from '../errors.js';
import { type CniVersion, LATEST_VERSION } from './versions.js';

/** `'delegate'`: the number the delegated plugin printed (999 when it printed none). */
export const CNI_ERROR_NUMBERS: { readonly [K in CniPluginErrorCode]: number | 'delegate' } = {
  'incompatible-version': 1,
  'unsupported-field': 2,
  'unknown-container': 3,
  'invalid-env': 4,
  'io-failure': 5,
  'decode-failed': 6,
  'invalid-config': 7,
  'invalid-netns': 8,
  'try-again': 11,
  'plugin-not-available': 50,
  'limited-connectivity': 51,
  'delegate-failed': 'delegate',
  'ipam-failed': 999,
  'dataplane-failed': 999,
  'datastore-failed': 999,
  'kube-api-failed': 999,
  'invalid-annotation': 999,
  'check-failed': 999,
  'bad-flag': 100,
  internal: 999,
};

export const INTERNAL_ERROR_NUMBER = 999;

export interface CniErrorObject {
  cniVersion: string;
  code: number;
  msg: string;
  details?: string;
}

export function cniErrorNumber(e: CniPluginError): number {
  const n = CNI_ERROR_NUMBERS[e.code];
  if (n === 'delegate') return e.delegateCode ?? INTERNAL_ERROR_NUMBER;
  return n;
}

/**
 * The error object for anything thrown. A `CniPluginError` keeps its code; anything else is an
 * internal error with its message only (never a stack trace).
 */
export function toCniErrorObject(e: unknown, version: CniVersion = LATEST_VERSION): CniErrorObject {
  const err = isCniPluginError(e) ? e : new CniPluginError('internal', messageOf(e) || 'unknown error');
  const out: CniErrorObject = { cniVersion: version, code: cniErrorNumber(err), msg: err.message };
  if (err.details) out.details = err.details;
  return out;
}

/** How results and errors are printed on stdout: indented like the reference library. */
export function formatJson(value: unknown): string {
  return `${JSON.stringify(value, null, 4)}\n`;
}
