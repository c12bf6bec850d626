export const INSTALL_ERROR_CODES = [
  /** A variable or the template is wrong: fix the DaemonSet. */
  'config',
  /** A file could not be read, copied or written. */
  'io',
  /** The API server refused or could not be reached for the plugin's token. */
  'kubernetes',
] as const;

export type InstallErrorCode = (typeof INSTALL_ERROR_CODES)[number];

export class InstallError extends Error {
  readonly code: InstallErrorCode;

  constructor(code: InstallErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'InstallError';
    this.code = code;
  }
}

export function isInstallError(e: unknown, code?: InstallErrorCode): e is InstallError {
  return e instanceof InstallError && (code === undefined || e.code === code);
}
