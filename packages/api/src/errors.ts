/**
 * The api package's closed error vocabulary. Callers branch on `code`, never on message text.
 */
export const API_ERROR_CODES = [
  'invalid-resource', // a resource broke one or more schema/validation rules (see `errors`)
  'invalid-selector', // selector text failed to parse (see `column`)
  'decode-failed', // YAML/JSON text could not be decoded into documents
  'conversion-failed', // a v1 or Kubernetes object could not be converted to v3
] as const;
export type ApiErrorCode = (typeof API_ERROR_CODES)[number];

/** One broken rule at one field. Printed as `<path>: <rule>`, e.g. `spec.blockSize: must be between 20 and 32 for IPv4`. */
export interface FieldError {
  /** Dotted path from the document root, with indexes in brackets: `spec.ingress[0].action`. */
  path: string;
  /** The rule that was broken, phrased for a human. */
  rule: string;
}

export function formatFieldError(e: FieldError): string {
  return e.path ? `${e.path}: ${e.rule}` : e.rule;
}

export class ApiError extends Error {
  readonly code: ApiErrorCode;
  constructor(code: ApiErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ApiError';
    this.code = code;
  }
}

/** Every field error of one document, not just the first. */
export class ValidationError extends ApiError {
  readonly errors: readonly FieldError[];
  /** What the document was called, e.g. `IPPool "pool-1"` or `document 3 of pools.yaml`. */
  readonly subject: string;
  constructor(subject: string, errors: readonly FieldError[]) {
    super(
      'invalid-resource',
      `${subject} is invalid:\n${errors.map((e) => `  - ${formatFieldError(e)}`).join('\n')}`,
    );
    this.name = 'ValidationError';
    this.subject = subject;
    this.errors = errors;
  }
}

export class SelectorError extends ApiError {
  /** 1-based column of the offending character in the selector text. */
  readonly column: number;
  readonly selector: string;
  constructor(selector: string, column: number, reason: string) {
    super(
      'invalid-selector',
      `invalid selector at column ${column}: ${reason}\n  ${selector}\n  ${' '.repeat(Math.max(0, column - 1))}^`,
    );
    this.name = 'SelectorError';
    this.selector = selector;
    this.column = column;
  }
}

export function assertNever(x: never): never {
  throw new Error(`unreachable: ${JSON.stringify(x)}`);
}
