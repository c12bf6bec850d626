/**
 * calico-node's closed error vocabulary. Callers branch on `code`, never on message text.
 */
export const NODE_ERROR_CODES = [
  'config', // an environment variable has a value calico-node cannot use (named in the message)
  'autodetect', // no usable IPv4 address could be found or confirmed for this node
  'conflict', // another Node already uses this node's address
  'datastore', // the datastore refused or failed a start-up write or read
  'usage', // the command line is wrong
] as const;
export type NodeErrorCode = (typeof NODE_ERROR_CODES)[number];

export class NodeError extends Error {
  readonly code: NodeErrorCode;
  constructor(code: NodeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NodeError';
    this.code = code;
  }
}

export function isNodeError(e: unknown, code?: NodeErrorCode): e is NodeError {
  return e instanceof NodeError && (code === undefined || e.code === code);
}

/** The message of anything thrown. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
