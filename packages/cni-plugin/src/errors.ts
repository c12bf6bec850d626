/**
 * The CNI plugin's closed error vocabulary. Every failure a handler reports is a `CniPluginError`
 * with one of these codes; `spec/error.ts` maps each code to the number printed in the CNI error
 * object, in one exhaustive table. Foreign errors (datastore, IPAM, kernel, child processes) are
 * classified once, where they are caught, never by message text further up.
 */
export const CNI_PLUGIN_ERROR_CODES = [
  'incompatible-version', // the config's cniVersion (or the command for it) is not supported
  'unsupported-field', // a field we understand but refuse (spec: message names key and value)
  'unknown-container', // the container (its netns) does not exist
  'invalid-env', // a CNI_* variable is missing or malformed (message names it)
  'io-failure', // reading stdin or a file failed
  'decode-failed', // stdin is not JSON, or not a JSON object
  'invalid-config', // the network config is wrong (message names the field)
  'invalid-netns', // CNI_NETNS does not name a network namespace
  'try-again', // a transient condition: the datastore is unreachable or not ready
  'plugin-not-available', // STATUS: cannot serve ADD now
  'limited-connectivity', // STATUS: cannot serve ADD, and existing pods may be affected
  'delegate-failed', // the delegated IPAM plugin reported an error (its code is passed on)
  'ipam-failed', // IPAM could not assign or release addresses
  'dataplane-failed', // programming interfaces, addresses, routes or sysctls failed
  'datastore-failed', // the datastore refused a read or write
  'kube-api-failed', // the Kubernetes API server refused to give the pod or its namespace
  'invalid-annotation', // a cni.projectcalico.org/* annotation is malformed, conflicting or not allowed
  'check-failed', // CHECK found the workload's networking not as ADD left it
  'bad-flag', // an unknown command-line flag
  'internal', // anything not classified above
] as const;
export type CniPluginErrorCode = (typeof CNI_PLUGIN_ERROR_CODES)[number];

export class CniPluginError extends Error {
  readonly code: CniPluginErrorCode;
  /** Longer explanation, printed as the error object's `details`. */
  readonly details?: string;
  /** For `delegate-failed`: the code the delegated plugin printed, passed on unchanged. */
  readonly delegateCode?: number;
  constructor(
    code: CniPluginErrorCode,
    message: string,
    options?: { details?: string; cause?: unknown; delegateCode?: number },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CniPluginError';
    this.code = code;
    if (options?.details !== undefined) this.details = options.details;
    if (options?.delegateCode !== undefined) this.delegateCode = options.delegateCode;
  }
}

export function isCniPluginError(e: unknown, code?: CniPluginErrorCode): e is CniPluginError {
  return e instanceof CniPluginError && (code === undefined || e.code === code);
}

/** The message of anything thrown, without a stack. */
export function messageOf(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}
