/**
 * The bird-bridge package's closed error vocabulary. Callers branch on `code`, never on message
 * text. Foreign errors (socket, child process, file system) are classified once, where they happen.
 */
export const BIRD_BRIDGE_ERROR_CODES = [
  'invalid-input', // the snapshot given to the renderer cannot be rendered (named field is wrong)
  'config-rejected', // `bird -p -c` refused a rendered configuration (its message is in the error)
  'bird-unavailable', // the bird executable could not be run at all (missing, not executable)
  'not-running', // an operation needs a running BIRD and there is none
  'control-connect', // the control socket could not be reached (no socket, refused, permission)
  'control-protocol', // BIRD answered something that is not its control protocol
  'control-timeout', // BIRD did not finish a reply in time
  'command-failed', // BIRD answered a command with an error reply (8xxx/9xxx), text in the message
  'closed', // the object was stopped or closed and cannot be used any more
] as const;
export type BirdBridgeErrorCode = (typeof BIRD_BRIDGE_ERROR_CODES)[number];

export class BirdBridgeError extends Error {
  readonly code: BirdBridgeErrorCode;
  constructor(code: BirdBridgeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BirdBridgeError';
    this.code = code;
  }
}

export function isBirdBridgeError(e: unknown, code?: BirdBridgeErrorCode): e is BirdBridgeError {
  return e instanceof BirdBridgeError && (code === undefined || e.code === code);
}
