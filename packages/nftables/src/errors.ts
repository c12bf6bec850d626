/**
 * The nftables package's closed error vocabulary. libnftables reports failures only as text in its
 * error buffer; that text is classified once, in {@link classifyNftError}, and callers branch on
 * `code`, never on message text. The same function serves the real context and `FakeNft`, which
 * produces libnftables' own wording.
 */
export const NFTABLES_ERROR_CODES = [
  'not-found', // a table, chain, rule handle, set, element or network namespace does not exist
  'exists', // `create` of something that exists, or a map element whose key is taken
  'invalid', // nft or the kernel rejected the input: syntax, types, references in use, loops
  'unavailable', // libnftables (or the kernel's nf_tables) is not there
  'permission', // not allowed: not root, no CAP_NET_ADMIN
  'failed', // anything else: out of memory, a worker that died, an unclassified error
] as const;
export type NftablesErrorCode = (typeof NFTABLES_ERROR_CODES)[number];

export interface NftablesErrorOptions {
  /** nft's error text, untouched ('' when the failure did not come from nft). */
  detail?: string;
  /** 0-based index of the failing command when nft said which one (JSON parse errors). */
  commandIndex?: number;
  /** The network namespace (name or path) the context acts in; absent for the caller's own. */
  netns?: string;
  cause?: unknown;
}

export class NftablesError extends Error {
  readonly code: NftablesErrorCode;
  readonly detail: string;
  readonly commandIndex: number | undefined;
  readonly netns: string | undefined;
  constructor(code: NftablesErrorCode, message: string, options: NftablesErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'NftablesError';
    this.code = code;
    this.detail = options.detail ?? '';
    this.commandIndex = options.commandIndex;
    this.netns = options.netns;
  }
}

export function isNftablesError(e: unknown, code?: NftablesErrorCode): e is NftablesError {
  return e instanceof NftablesError && (code === undefined || e.code === code);
}

// Texts as libnftables 1.0.6 and the kernel print them. Order matters: permission and
// availability first (they can appear next to other words), then the object outcomes.
const RULES: readonly [NftablesErrorCode, RegExp][] = [
  ['permission', /Operation not permitted|Permission denied|EPERM|EACCES/i],
  ['unavailable', /Protocol not supported|cannot open shared object|Failed to load shared library/i],
  ['exists', /File exists|EEXIST/i],
  ['not-found', /No such file or directory|does not exist|ENOENT/i],
];

// The kernel's answer comes as "Could not process rule: <strerror>". These mean it refused the
// batch as inconsistent — EBUSY (a chain or set still referenced), ELOOP (a jump loop),
// EOPNOTSUPP (a jump to a base chain), EINVAL, ERANGE, E2BIG — which is the caller's input being
// wrong, like a syntax error. Other kernel errors (ENOMEM, ENOBUFS, …) are `failed`.
const KERNEL_PREFIX = /^Could not process rule:/;
const KERNEL_INVALID =
  /Device or resource busy|Too many links|Operation not supported|Invalid argument|Numerical result out of range|Value too large|Argument list too long|File name too long/i;

/**
 * Maps libnftables' error text (its error buffer) to an error code. A message that does not come
 * from the kernel is nft's parser or evaluation refusing the input ("syntax error", "Could not
 * resolve hostname", "You must add 'flags interval'…"): `invalid`.
 */
export function classifyNftError(text: string): NftablesErrorCode {
  const first = firstErrorLine(text);
  for (const [code, re] of RULES) {
    if (re.test(first)) return code;
  }
  if (KERNEL_PREFIX.test(first)) return KERNEL_INVALID.test(first) ? 'invalid' : 'failed';
  return first === '' ? 'failed' : 'invalid';
}

/**
 * The line that names the failure. nft prints `<location>: Error: <what>` lines, sometimes
 * followed by the offending input and a caret line; with several errors the first one is the
 * cause and the rest follow from it.
 */
export function firstErrorLine(text: string): string {
  const lines = text.split('\n');
  const error = lines.find((l) => /\bError:/.test(l));
  const line = error ?? lines.find((l) => l.trim() !== '') ?? '';
  return line.replace(/^.*?\bError:\s*/, '').trim();
}

/** nft's JSON parser says "Parsing command array at index N failed." for a bad command. */
export function failedCommandIndex(text: string): number | undefined {
  const m = /command array at index (\d+) failed/.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** The error for a failed `nft_run_cmd_from_buffer`, from the text in the error buffer. */
export function nftErrorFromText(text: string, netns?: string): NftablesError {
  const code = classifyNftError(text);
  const what = firstErrorLine(text) || 'nft reported a failure without a message';
  const where = netns === undefined ? '' : ` (netns ${netns})`;
  const commandIndex = failedCommandIndex(text);
  const at = commandIndex === undefined ? '' : ` at command ${commandIndex}`;
  return new NftablesError(code, `nftables rejected the batch${at}${where}: ${what}`, {
    detail: text,
    ...(commandIndex === undefined ? {} : { commandIndex }),
    ...(netns === undefined ? {} : { netns }),
  });
}

/** Maps an errno (from `open` or `setns`) to an error code. */
export function classifyErrno(errno: string | undefined): NftablesErrorCode {
  switch (errno) {
    case 'ENOENT':
    case 'ENOTDIR':
      return 'not-found';
    case 'EPERM':
    case 'EACCES':
      return 'permission';
    case 'EINVAL':
    case 'EBADF':
      return 'invalid';
    default:
      return 'failed';
  }
}
