/**
 * The netlinux package's closed error vocabulary. iproute2 (and nsenter/tee) stderr is classified
 * once, in {@link classifyStderr}; callers branch on `code`, never on message text.
 */
export const NETLINUX_ERROR_CODES = [
  'not-found', // no such device, network namespace, address, route, neighbour or sysctl
  'exists', // the device, address, route, neighbour or namespace is already there
  'permission', // not allowed (not root, missing CAP_NET_ADMIN, read-only sysctl)
  'invalid', // the request is malformed or the kernel rejected its arguments
  'busy', // the object is in use
  'failed', // anything else: a tool missing, a timeout, an unclassified kernel error
] as const;
export type NetlinuxErrorCode = (typeof NETLINUX_ERROR_CODES)[number];

export interface NetlinuxErrorOptions {
  /** Raw stderr of the failed command, untouched. */
  detail?: string;
  /** The command line that failed, e.g. `['ip', 'link', 'del', 'cali1']`. */
  command?: readonly string[];
  /** The network namespace (name or path) the command ran in; absent for the caller's own. */
  netns?: string;
  cause?: unknown;
}

export class NetlinuxError extends Error {
  readonly code: NetlinuxErrorCode;
  /** Raw stderr of the failed command ('' when the failure did not come from a command). */
  readonly detail: string;
  readonly command: readonly string[] | undefined;
  readonly netns: string | undefined;
  constructor(code: NetlinuxErrorCode, message: string, options: NetlinuxErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'NetlinuxError';
    this.code = code;
    this.detail = options.detail ?? '';
    this.command = options.command;
    this.netns = options.netns;
  }
}

export function isNetlinuxError(e: unknown, code?: NetlinuxErrorCode): e is NetlinuxError {
  return e instanceof NetlinuxError && (code === undefined || e.code === code);
}

// Order matters. "Cannot create namespace file ...: File exists" must be `exists` even though it
// starts like a not-found message, so `exists` is tested first.
// A tool that could not be started inside a namespace ("nsenter: failed to execute ip: No such
// file or directory") is a broken installation, not a missing object, so that rule comes first.
const RULES: readonly [NetlinuxErrorCode, RegExp][] = [
  ['failed', /failed to execute|command not found/i],
  ['exists', /File exists|already exists|Address already assigned|EEXIST/i],
  [
    'not-found',
    /Cannot find device|does not exist|No such device|No such process|No such file or directory|not found|Cannot open network namespace|Network is unreachable|Cannot assign requested address|ENOENT|ESRCH|ENODEV/i,
  ],
  ['permission', /Operation not permitted|Permission denied|EPERM|EACCES/i],
  ['busy', /Device or resource busy|Resource busy|EBUSY/i],
  [
    'invalid',
    /Invalid argument|is a garbage|is expected rather than|Error: argument|Unknown device type|not a valid|failed policy validation|Numerical result out of range|invalid|Command line is not complete|Not enough information|unknown|Usage:|EINVAL|ERANGE/i,
  ],
];

/**
 * Maps the stderr of a failed iproute2/nsenter/tee command to an error code. The command runs
 * with LC_ALL=C, so the kernel's and the tools' English texts are what is matched here.
 */
export function classifyStderr(stderr: string): NetlinuxErrorCode {
  for (const [code, re] of RULES) {
    if (re.test(stderr)) return code;
  }
  return 'failed';
}

/** Maps a Node.js system error code (`ENOENT`, `EACCES`, …) from file I/O on /proc/sys. */
export function classifyErrno(errno: string | undefined): NetlinuxErrorCode {
  switch (errno) {
    case 'ENOENT':
    case 'ENODEV':
    case 'ENOTDIR':
      return 'not-found';
    case 'EEXIST':
      return 'exists';
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return 'permission';
    case 'EBUSY':
      return 'busy';
    case 'EINVAL':
    case 'ERANGE':
      return 'invalid';
    default:
      return 'failed';
  }
}

/** A failed `ip -batch` run: the commands before `index` were applied, the rest were not. */
export class NetlinuxBatchError extends NetlinuxError {
  /** 0-based index of the command that failed; `undefined` when iproute2 did not say. */
  readonly index: number | undefined;
  constructor(
    code: NetlinuxErrorCode,
    message: string,
    index: number | undefined,
    options: NetlinuxErrorOptions = {},
  ) {
    super(code, message, options);
    this.name = 'NetlinuxBatchError';
    this.index = index;
  }
}
