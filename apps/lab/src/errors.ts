/**
 * The lab's closed error vocabulary. Each error's message says what to do; main.ts prints it and
 * exits with the code's status.
 */
export const LAB_ERROR_CODES = [
  'usage', // a wrong command, flag or value
  'prerequisite', // a system package, root, or a built executable is missing
  'state', // the lab is already up, not up, or was left behind by a crash
  'setup', // building the lab failed (what failed is in the message)
  'not-found', // the namespace or pod named does not exist
  'command', // a command run inside the lab failed
] as const;
export type LabErrorCode = (typeof LAB_ERROR_CODES)[number];

export class LabError extends Error {
  readonly code: LabErrorCode;
  constructor(code: LabErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LabError';
    this.code = code;
  }
}

export function isLabError(e: unknown, code?: LabErrorCode): e is LabError {
  return e instanceof LabError && (code === undefined || e.code === code);
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Exit status per code: 2 for usage, 1 otherwise. */
export function exitStatusOf(e: unknown): number {
  return isLabError(e, 'usage') ? 2 : 1;
}
