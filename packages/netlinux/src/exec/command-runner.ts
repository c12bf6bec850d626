/**
 * The one I/O seam of this package: run a program, optionally inside a network namespace, and
 * hand back what it printed. Everything above it (argument building, JSON parsing, error
 * classification) is calculation and is unit-tested with a fake runner.
 */
export interface RunOptions {
  /** Written to the program's stdin, then stdin is closed (`ip -batch -`, `tee`). */
  input?: string;
  /**
   * Run inside this network namespace: a name under /run/netns (`pod-1`) or a path to a
   * namespace file (`/proc/1234/ns/net`, `/var/run/netns/pod-1`). Absent: the caller's own.
   */
  netns?: string;
}

export interface CommandResult {
  /** Exit status; `0` is success. A program killed by a signal or a timeout reports `-1`. */
  exitCode: number;
  stdout: string;
  stderr: string;
}

export interface CommandRunner {
  /**
   * Runs `cmd args…` without a shell. Resolves with the exit code and output whatever the exit
   * code; rejects (with a NetlinuxError) only when the program could not be run at all.
   */
  run(cmd: string, args: readonly string[], opts?: RunOptions): Promise<CommandResult>;
}

/** Directory where `ip netns` keeps named namespaces. */
export const NETNS_RUN_DIR = '/run/netns';

/** True for a namespace given as a path (contains `/`) rather than as a name. */
export function isNetnsPath(netns: string): boolean {
  return netns.includes('/');
}

/**
 * The name of a namespace given either as a name or as a path directly under /run/netns or
 * /var/run/netns; `undefined` for any other path (e.g. `/proc/<pid>/ns/net`). A name lets
 * iproute2 switch namespace itself (`ip -n`), saving an `nsenter` process.
 */
export function netnsName(netns: string): string | undefined {
  if (!isNetnsPath(netns)) return netns;
  const m = /^\/(?:var\/)?run\/netns\/([^/]+)$/.exec(netns);
  return m?.[1];
}

/** The namespace file for a name or path: names resolve under /run/netns. */
export function netnsPath(netns: string): string {
  return isNetnsPath(netns) ? netns : `${NETNS_RUN_DIR}/${netns}`;
}

/** Tools that take `-n <name>` to switch network namespace themselves. */
const NETNS_AWARE_TOOLS = new Set(['ip', 'bridge']);

/**
 * The argv that runs `cmd args` in `netns`: `ip -n <name> …` when iproute2 can switch by itself,
 * else `nsenter --net=<path> cmd …`. Pure; exported for the real runner and for tests.
 */
export function commandLine(cmd: string, args: readonly string[], netns?: string): string[] {
  if (netns === undefined) return [cmd, ...args];
  const name = netnsName(netns);
  if (name !== undefined && NETNS_AWARE_TOOLS.has(cmd)) return [cmd, '-n', name, ...args];
  return ['nsenter', `--net=${netnsPath(netns)}`, cmd, ...args];
}
