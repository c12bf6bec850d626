import { constants } from 'node:fs';
import { open, readFile, statfs } from 'node:fs/promises';
import {
  classifyErrno,
  classifyStderr,
  isNetlinuxError,
  NetlinuxBatchError,
  NetlinuxError,
  type NetlinuxErrorCode,
} from './errors.js';
import type { CommandRunner } from './exec/command-runner.js';
import { ProcessCommandRunner } from './exec/process-runner.js';
import { ipFamily } from './ip.js';
import {
  addrAddArgs,
  addrDelArgs,
  addrReplaceArgs,
  batchInput,
  bridgeAddArgs,
  failedBatchIndex,
  fdbArgs,
  ipipAddArgs,
  type LinkChanges,
  linkDelArgs,
  linkOpArgs,
  linkSetArgs,
  neighDelArgs,
  neighSetArgs,
  routeArgs,
  vethAddArgs,
  vxlanAddArgs,
} from './ip-commands.js';
import { checkIfName, checkNetns } from './names.js';
import { loadLibc } from './netlink/libc.js';
import { Rtnetlink } from './netlink/rtnetlink.js';
import {
  parseAddrs,
  parseFdb,
  parseJsonArray,
  parseLinks,
  parseNeighbours,
  parseNetnsList,
  parseRoute,
  parseRoutes,
} from './parse.js';
import { PROC_SYS, sysctlPath } from './sysctl-key.js';
import type {
  Addr,
  AddrFilter,
  AddrOptions,
  BridgeSpec,
  FdbEntry,
  FdbSpec,
  IgnoreMissing,
  IpFamily,
  IpipSpec,
  Link,
  LinkOp,
  Neighbour,
  NeighbourFilter,
  NeighbourSpec,
  Route,
  RouteFilter,
  RouteSpec,
  VethSpec,
  VxlanSpec,
} from './types.js';

export interface NetlinuxOptions {
  /** How programs are run; default: child processes ({@link ProcessCommandRunner}). */
  runner?: CommandRunner;
  /** Root of the sysctl tree; default `/proc/sys`. Tests point it at a temp dir. */
  procSys?: string;
  /** Where named namespaces live; default `/run/netns`. Tests point it at a temp dir. */
  netnsDir?: string;
  /**
   * Make veth pairs and link, address and route changes ({@link Netlinux.apply}) over rtnetlink
   * from this process when the runtime can call libc (Bun, or Node with koffi), instead of starting
   * `ip`: same results and error codes, about 2 ms less each. The requests are synchronous (the
   * kernel answers within the call), so this suits changes the kernel makes quickly; deletions stay
   * with `ip`. Default: off.
   */
  netlink?: boolean;
}

let sharedRtnetlink: Promise<Rtnetlink | undefined> | undefined;

/**
 * One rtnetlink client per process, shared by every Netlinux that enables it: it keeps a socket
 * open in this process's namespace, and a long-running program (the CNI plugin service) makes a
 * Netlinux per request.
 */
function processRtnetlink(): Promise<Rtnetlink | undefined> {
  sharedRtnetlink ??= loadLibc().then((libc) => (libc ? new Rtnetlink(libc) : undefined));
  return sharedRtnetlink;
}

/** `f_type` of a namespace file (nsfs), from linux/magic.h. */
const NSFS_MAGIC = 0x6e736673;

/** Namespace argument of every operation: a name under /run/netns, or a path to a netns file. */
export type Netns = string | undefined;

/**
 * Linux networking through iproute2 and /proc/sys.
 *
 * API: every operation is async and takes an optional last `ns` argument: a namespace name
 * (`pod-1`, meaning /run/netns/pod-1) or a namespace path (`/proc/<pid>/ns/net`, what CNI passes in
 * CNI_NETNS). Absent, it acts on the caller's own namespace. Failures are {@link NetlinuxError}s with
 * a closed `code`; deletes take `{ignoreMissing}` and then resolve `false` instead of failing with
 * `not-found` (a missing namespace counts as missing too).
 *
 * Design: each operation is one child process (`ip`, `bridge`, or `nsenter … cat|tee` for
 * sysctls inside a namespace; sysctls of the caller's own namespace are plain file I/O). Argument
 * building ({@link vethAddArgs} and friends) and JSON parsing are pure functions; to make several
 * changes in one process, build their arguments and pass them to {@link Netlinux.batch}.
 *
 * Thread-safety: no state besides the runner; concurrent calls are independent processes, and the
 * kernel orders them.
 */
export class Netlinux {
  readonly #runner: CommandRunner;
  readonly #procSys: string;
  readonly #netnsDir: string;
  #rtnetlink: Promise<Rtnetlink | undefined> | undefined;

  constructor(options: NetlinuxOptions = {}) {
    this.#runner = options.runner ?? new ProcessCommandRunner();
    this.#procSys = options.procSys ?? PROC_SYS;
    this.#netnsDir = options.netnsDir ?? '/run/netns';
    if (options.netlink !== true) this.#rtnetlink = Promise.resolve(undefined);
  }

  /** The rtnetlink path when enabled and available, loaded on first use. */
  #netlink(): Promise<Rtnetlink | undefined> {
    this.#rtnetlink ??= processRtnetlink();
    return this.#rtnetlink;
  }

  /** A namespace argument as a path. */
  #netnsPath(ns: string): string {
    checkNetns(ns);
    return ns.includes('/') ? ns : `${this.#netnsDir}/${ns}`;
  }

  /**
   * The changes in order, stopping at the first failure, as {@link Netlinux.batch} does (one `ip
   * -batch`, or rtnetlink requests when enabled): a {@link NetlinuxBatchError} names the index.
   */
  async apply(ops: readonly LinkOp[], ns?: string): Promise<void> {
    if (ops.length === 0) return;
    const nl = await this.#netlink();
    if (nl) return nl.apply(ops, ns === undefined ? undefined : this.#netnsPath(ns));
    return this.batch(ops.map(linkOpArgs), ns);
  }

  // ---- running ---------------------------------------------------------------------------------

  /** Runs a tool; resolves its stdout, or throws the classified error. */
  async #run(cmd: string, args: readonly string[], ns: Netns, input?: string): Promise<string> {
    if (ns !== undefined) checkNetns(ns);
    const r = await this.#runner.run(cmd, args, input === undefined ? { netns: ns } : { netns: ns, input });
    if (r.exitCode === 0) return r.stdout;
    throw commandError(classifyStderr(r.stderr), cmd, args, ns, r.stderr);
  }

  #ip(args: readonly string[], ns: Netns): Promise<string> {
    return this.#run('ip', args, ns);
  }

  async #ignoringMissing(opts: IgnoreMissing | undefined, op: () => Promise<unknown>): Promise<boolean> {
    try {
      await op();
      return true;
    } catch (e) {
      if (opts?.ignoreMissing && isNetlinuxError(e, 'not-found')) return false;
      throw e;
    }
  }

  /**
   * Runs several `ip` commands (argument lists as the builders in ip-commands.ts return them) in
   * one `ip -batch -` process, in order, stopping at the first failure.
   *
   * Not atomic: the commands before the failing one stay applied. The error is a
   * {@link NetlinuxBatchError} whose `index` says which command failed, so a caller can undo or
   * retry the rest. Words may not contain whitespace, quotes, backslashes or `#`.
   */
  async batch(commands: readonly (readonly string[])[], ns?: string): Promise<void> {
    if (commands.length === 0) return;
    const input = batchInput(commands);
    if (ns !== undefined) checkNetns(ns);
    const r = await this.#runner.run('ip', ['-batch', '-'], { netns: ns, input });
    if (r.exitCode === 0) return;
    const index = failedBatchIndex(r.stderr);
    const failed = index === undefined ? undefined : commands[index];
    const code = classifyStderr(r.stderr);
    const what = failed ? `ip ${failed.join(' ')}` : 'ip -batch';
    throw new NetlinuxBatchError(
      code,
      `${what}${index === undefined ? '' : ` (batch command ${index + 1} of ${commands.length})`}${inNs(ns)}: ${firstLine(r.stderr)}`,
      index,
      { detail: r.stderr, command: failed ? ['ip', ...failed] : ['ip', '-batch', '-'], netns: ns },
    );
  }

  // ---- namespaces ------------------------------------------------------------------------------

  /** `ip netns add`: creates /run/netns/<name>. Fails `exists` when it is there. */
  async createNetns(name: string): Promise<void> {
    await this.#ip(['netns', 'add', checkNetnsName(name)], undefined);
  }

  /** `ip netns del`; resolves `false` when there was no such namespace. */
  deleteNetns(name: string): Promise<boolean> {
    return this.#ignoringMissing({ ignoreMissing: true }, () =>
      this.#ip(['netns', 'del', checkNetnsName(name)], undefined),
    );
  }

  /** Names of the namespaces under /run/netns. */
  async listNetns(): Promise<string[]> {
    return parseNetnsList(await this.#ip(['-json', 'netns', 'list'], undefined)).map((n) => n.name);
  }

  /**
   * True when the name (under /run/netns) or path is a namespace file: one statfs, no process
   * (the nsfs magic, as the CNI libraries check it). A missing file, or a file that is not a
   * namespace, is `false`; a file that cannot be examined (permission) is an error.
   */
  async netnsExists(nameOrPath: string): Promise<boolean> {
    const path = this.#netnsPath(nameOrPath);
    try {
      return (await statfs(path)).type === NSFS_MAGIC;
    } catch (e) {
      const errno = (e as NodeJS.ErrnoException).code;
      if (errno === 'ENOENT' || errno === 'ENOTDIR') return false;
      throw fileError(e, `open ${path}`);
    }
  }

  // ---- links -----------------------------------------------------------------------------------

  async listLinks(ns?: string): Promise<Link[]> {
    return parseLinks(await this.#ip(['-d', '-json', 'link', 'show'], ns));
  }

  /** One device; fails `not-found` when there is none of that name. */
  async getLink(name: string, ns?: string): Promise<Link> {
    const links = parseLinks(await this.#ip(['-d', '-json', 'link', 'show', 'dev', checkIfName(name)], ns));
    const link = links[0];
    if (!link) throw new NetlinuxError('not-found', `no device ${name}${inNs(ns)}`, { netns: ns });
    return link;
  }

  /** Like {@link getLink}, but `undefined` when the device (or the namespace) does not exist. */
  async findLink(name: string, ns?: string): Promise<Link | undefined> {
    try {
      return await this.getLink(name, ns);
    } catch (e) {
      if (isNetlinuxError(e, 'not-found')) return undefined;
      throw e;
    }
  }

  /**
   * Creates a veth pair: `name` here (in `ns`), `peerName` in `peerNetns` when given (created there
   * directly, so it never clashes with a device here). Both ends stay down.
   */
  async createVethPair(spec: VethSpec, ns?: string): Promise<void> {
    const nl = await this.#netlink();
    if (nl) {
      vethAddArgs(spec); // the same checks of names and values
      nl.createVeth(
        spec,
        spec.peerNetns === undefined ? undefined : this.#netnsPath(spec.peerNetns),
        ns === undefined ? undefined : this.#netnsPath(ns),
      );
      return;
    }
    await this.#ip(vethAddArgs(spec), ns);
  }

  async createBridge(spec: BridgeSpec, ns?: string): Promise<void> {
    await this.#ip(bridgeAddArgs(spec), ns);
  }

  /** A VXLAN device; learning is off unless asked for. */
  async createVxlan(spec: VxlanSpec, ns?: string): Promise<void> {
    await this.#ip(vxlanAddArgs(spec), ns);
  }

  /**
   * An IPIP tunnel device. Asking for `tunl0` where the module was not loaded yet loads it, which
   * makes `tunl0`, and then fails `exists`: callers wanting `tunl0` treat `exists` as success.
   */
  async createIpip(spec: IpipSpec, ns?: string): Promise<void> {
    await this.#ip(ipipAddArgs(spec), ns);
  }

  /** Several changes to one device in one request (`ip link set dev <name> …`). */
  async setLink(name: string, changes: LinkChanges, ns?: string): Promise<void> {
    await this.#ip(linkSetArgs(name, changes), ns);
  }

  setLinkUp(name: string, ns?: string): Promise<void> {
    return this.setLink(name, { up: true }, ns);
  }

  setLinkDown(name: string, ns?: string): Promise<void> {
    return this.setLink(name, { up: false }, ns);
  }

  setLinkMtu(name: string, mtu: number, ns?: string): Promise<void> {
    return this.setLink(name, { mtu }, ns);
  }

  setLinkMac(name: string, mac: string, ns?: string): Promise<void> {
    return this.setLink(name, { mac }, ns);
  }

  /** Enslaves to a bridge; `null` releases. */
  setLinkMaster(name: string, master: string | null, ns?: string): Promise<void> {
    return this.setLink(name, { master }, ns);
  }

  /** Moves the device from `ns` into `targetNetns` (name or path). It comes out down. */
  moveLinkToNetns(name: string, targetNetns: string, ns?: string): Promise<void> {
    return this.setLink(name, { netns: targetNetns }, ns);
  }

  renameLink(name: string, newName: string, ns?: string): Promise<void> {
    return this.setLink(name, { name: newName }, ns);
  }

  /** Deletes a device (a veth takes its peer with it). */
  deleteLink(name: string, opts?: IgnoreMissing, ns?: string): Promise<boolean> {
    // Always `ip`, also with rtnetlink on: the kernel takes 10-30 ms to delete a veth, inside the
    // request, and a process keeps that wait off this one's event loop.
    return this.#ignoringMissing(opts, () => this.#ip(linkDelArgs(name), ns));
  }

  // ---- addresses -------------------------------------------------------------------------------

  async listAddrs(filter: AddrFilter = {}, ns?: string): Promise<Addr[]> {
    const args = [...familyOption(filter.family), '-json', 'addr', 'show'];
    if (filter.dev !== undefined) args.push('dev', checkIfName(filter.dev));
    return parseAddrs(await this.#ip(args, ns));
  }

  /** Adds `cidr` (an address alone is a host prefix) to `dev`; fails `exists` when present. */
  async addAddr(dev: string, cidr: string, opts?: AddrOptions, ns?: string): Promise<void> {
    await this.#ip(addrAddArgs(dev, cidr, opts), ns);
  }

  /** Adds `cidr` or updates its options when present. */
  async replaceAddr(dev: string, cidr: string, opts?: AddrOptions, ns?: string): Promise<void> {
    await this.#ip(addrReplaceArgs(dev, cidr, opts), ns);
  }

  delAddr(dev: string, cidr: string, opts?: IgnoreMissing, ns?: string): Promise<boolean> {
    return this.#ignoringMissing(opts, () => this.#ip(addrDelArgs(dev, cidr), ns));
  }

  /** Removes every address of `dev` (of one family, or of one scope, when given). */
  async flushAddrs(
    dev: string,
    opts: { family?: IpFamily; scope?: string } = {},
    ns?: string,
  ): Promise<void> {
    const args = [...familyOption(opts.family), 'addr', 'flush', 'dev', checkIfName(dev)];
    if (opts.scope !== undefined) args.push('scope', opts.scope);
    await this.#ip(args, ns);
  }

  // ---- routes ----------------------------------------------------------------------------------

  /**
   * Routes of one table (default `main`; `all` for every table) of one family, or of both when
   * `family` is not given (then read with one `table all` dump, filtered here).
   */
  async listRoutes(filter: RouteFilter = {}, ns?: string): Promise<Route[]> {
    const table = String(filter.table ?? 'main');
    const dev = filter.dev === undefined ? [] : ['dev', checkIfName(filter.dev)];
    if (filter.family !== undefined) {
      const out = await this.#ip([`-${filter.family}`, '-json', 'route', 'show', 'table', table, ...dev], ns);
      return parseRoutes(out, filter.family, filter.dev);
    }
    // Without a family, iproute2 dumps IPv4 only unless the table is `all`.
    const routes = parseRoutes(
      await this.#ip(['-json', 'route', 'show', 'table', 'all', ...dev], ns),
      undefined,
      filter.dev,
    );
    if (table === 'all') return routes;
    const want = table === 'main' || table === '254' ? undefined : table;
    return routes.filter((r) => r.table === want || (want === undefined && r.table === '254'));
  }

  /** Adds a route; fails `exists` when the same route is there. */
  async addRoute(route: RouteSpec, ns?: string): Promise<void> {
    await this.#ip(routeArgs('add', route), ns);
  }

  /** Adds or replaces the route to `dst` (same table, metric and type). */
  async replaceRoute(route: RouteSpec, ns?: string): Promise<void> {
    await this.#ip(routeArgs('replace', route), ns);
  }

  /** Deletes the first route that matches every field given. */
  delRoute(route: RouteSpec, opts?: IgnoreMissing, ns?: string): Promise<boolean> {
    return this.#ignoringMissing(opts, () => this.#ip(routeArgs('del', route), ns));
  }

  /** The route the kernel would use to reach the address `dst`; fails `not-found` when unreachable. */
  async getRoute(dst: string, ns?: string): Promise<Route> {
    const family = ipFamily(dst);
    if (dst.includes('/')) throw new NetlinuxError('invalid', `getRoute takes an address, got ${dst}`);
    const j = parseJsonArray(await this.#ip([`-${family}`, '-json', 'route', 'get', dst], ns), 'route')[0];
    if (!j) throw new NetlinuxError('failed', `ip route get ${dst} printed no route`, { netns: ns });
    const route = parseRoute(j, family);
    // `route get` reports no protocol of its own; the default filled in by parseRoute means nothing here.
    delete route.proto;
    return route;
  }

  // ---- neighbours and FDB ----------------------------------------------------------------------

  async listNeighbours(filter: NeighbourFilter = {}, ns?: string): Promise<Neighbour[]> {
    const args = [...familyOption(filter.family), '-json', 'neigh', 'show'];
    if (filter.dev !== undefined) args.push('dev', checkIfName(filter.dev));
    return parseNeighbours(await this.#ip(args, ns), filter.dev);
  }

  /** Adds a neighbour entry (default `nud permanent`); fails `exists` when there is one. */
  async addNeighbour(spec: NeighbourSpec, ns?: string): Promise<void> {
    await this.#ip(neighSetArgs('add', spec), ns);
  }

  async replaceNeighbour(spec: NeighbourSpec, ns?: string): Promise<void> {
    await this.#ip(neighSetArgs('replace', spec), ns);
  }

  delNeighbour(
    spec: Pick<NeighbourSpec, 'dst' | 'dev'>,
    opts?: IgnoreMissing,
    ns?: string,
  ): Promise<boolean> {
    return this.#ignoringMissing(opts, () => this.#ip(neighDelArgs(spec), ns));
  }

  /** FDB entries, of one device when `dev` is given. */
  async listFdb(dev?: string, ns?: string): Promise<FdbEntry[]> {
    const args = ['-json', 'fdb', 'show'];
    if (dev !== undefined) args.push('dev', checkIfName(dev));
    return parseFdb(await this.#run('bridge', args, ns), dev);
  }

  /** `bridge fdb add … self permanent`; fails `exists` when the MAC is there. */
  async addFdb(spec: FdbSpec, ns?: string): Promise<void> {
    await this.#run('bridge', fdbArgs('add', spec), ns);
  }

  /** Adds or updates the entry for the MAC. */
  async replaceFdb(spec: FdbSpec, ns?: string): Promise<void> {
    await this.#run('bridge', fdbArgs('replace', spec), ns);
  }

  /** Adds one more destination for the MAC (e.g. `00:00:00:00:00:00` flood entries). */
  async appendFdb(spec: FdbSpec, ns?: string): Promise<void> {
    await this.#run('bridge', fdbArgs('append', spec), ns);
  }

  delFdb(spec: FdbSpec, opts?: IgnoreMissing, ns?: string): Promise<boolean> {
    return this.#ignoringMissing(opts, () => this.#run('bridge', fdbArgs('del', spec), ns));
  }

  // ---- sysctls ---------------------------------------------------------------------------------

  /** Reads a sysctl (`net.ipv4.ip_forward` or `net/ipv4/conf/eth0.100/rp_filter`), trimmed. */
  async readSysctl(key: string, ns?: string): Promise<string> {
    const path = `${this.#procSys}/${sysctlPath(key)}`;
    if (ns !== undefined) return (await this.#run('cat', [path], ns)).trim();
    try {
      return (await readFile(path, 'utf8')).trim();
    } catch (e) {
      throw fileError(e, `read sysctl ${key}`);
    }
  }

  /** Writes a sysctl; in a namespace through `nsenter --net=… tee`. */
  writeSysctl(key: string, value: string | number, ns?: string): Promise<void> {
    return this.writeSysctls([[key, value]], ns);
  }

  /**
   * Writes several sysctls. Inside a namespace, entries with the same value share one `tee`
   * process, so the order between entries of different values is not kept: use
   * {@link writeSysctl} in sequence where order matters. In the caller's own namespace the writes
   * are plain file writes, in order.
   */
  async writeSysctls(entries: Iterable<readonly [string, string | number]>, ns?: string): Promise<void> {
    const list = [...entries].map(([key, value]) => {
      const v = String(value);
      if (/[\n\0]/.test(v)) throw new NetlinuxError('invalid', `sysctl ${key}: value has a newline or NUL`);
      return { key, path: `${this.#procSys}/${sysctlPath(key)}`, value: v };
    });
    if (ns === undefined) {
      for (const e of list) {
        try {
          const fh = await open(e.path, constants.O_WRONLY);
          try {
            await fh.write(e.value);
          } finally {
            await fh.close();
          }
        } catch (err) {
          throw fileError(err, `write sysctl ${e.key}=${e.value}`);
        }
      }
      return;
    }
    const byValue = new Map<string, string[]>();
    for (const e of list) byValue.set(e.value, [...(byValue.get(e.value) ?? []), e.path]);
    for (const [value, paths] of byValue) {
      await this.#run('tee', paths, ns, value);
    }
  }
}

function checkNetnsName(name: string): string {
  if (name.includes('/'))
    throw new NetlinuxError('invalid', `expected a namespace name, got a path: ${name}`);
  return checkNetns(name);
}

function familyOption(family: IpFamily | undefined): string[] {
  return family === undefined ? [] : [`-${family}`];
}

function inNs(ns: Netns): string {
  return ns === undefined ? '' : ` (netns ${ns})`;
}

function firstLine(stderr: string): string {
  return stderr.trim().split('\n')[0] || 'failed without a message';
}

function commandError(
  code: NetlinuxErrorCode,
  cmd: string,
  args: readonly string[],
  ns: Netns,
  stderr: string,
): NetlinuxError {
  return new NetlinuxError(code, `${cmd} ${args.join(' ')}${inNs(ns)}: ${firstLine(stderr)}`, {
    detail: stderr,
    command: [cmd, ...args],
    netns: ns,
  });
}

function fileError(e: unknown, what: string): NetlinuxError {
  const errno = (e as NodeJS.ErrnoException | undefined)?.code;
  return new NetlinuxError(classifyErrno(errno), `${what}: ${(e as Error).message}`, { cause: e });
}
