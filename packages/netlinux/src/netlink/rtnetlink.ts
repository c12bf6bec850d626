/**
 * Interface, address and route changes over rtnetlink from this process: what `ip link add … type
 * veth`, `ip link set … up`, `ip addr add` and `ip route add` do, without starting `ip` (about 2 ms
 * each here). Used by `Netlinux` when the runtime can call libc (libc.ts).
 *
 * A change inside another network namespace goes through a socket opened there: the calling thread
 * enters the namespace (setns), creates the socket and returns at once, all synchronously, so no
 * other code ever runs in the foreign namespace. A socket belongs to the namespace it was made in.
 *
 * Everything here is synchronous: the kernel answers an rtnetlink request before `send` returns.
 */
import { closeSync, openSync } from 'node:fs';
import { NetlinuxBatchError, NetlinuxError, type NetlinuxErrorCode } from '../errors.js';
import type { LinkOp, VethSpec } from '../types.js';
import type { Libc } from './libc.js';
import {
  getLinkMessage,
  linkUpMessage,
  NLMSG_ERROR,
  newAddrMessage,
  newRouteMessage,
  newVethMessage,
  parseReplies,
  RTM_NEWLINK,
} from './messages.js';

const AF_NETLINK = 16;
const SOCK_RAW = 3;
const SOCK_CLOEXEC = 0o2000000;
const NETLINK_ROUTE = 0;
const CLONE_NEWNET = 0x40000000;

const ERRNO: Record<number, [NetlinuxErrorCode, string]> = {
  1: ['permission', 'Operation not permitted'],
  2: ['not-found', 'No such file or directory'],
  3: ['not-found', 'No such process'],
  13: ['permission', 'Permission denied'],
  16: ['busy', 'Device or resource busy'],
  17: ['exists', 'File exists'],
  19: ['not-found', 'No such device'],
  22: ['invalid', 'Invalid argument'],
  34: ['invalid', 'Numerical result out of range'],
  95: ['invalid', 'Operation not supported'],
  99: ['not-found', 'Cannot assign requested address'],
  101: ['not-found', 'Network is unreachable'],
};

function errnoError(errno: number, what: string, netns: string | undefined): NetlinuxError {
  const [code, text] = ERRNO[errno] ?? ['failed', `errno ${errno}`];
  return new NetlinuxError(code, `${what}${netns ? ` in ${netns}` : ''}: RTNETLINK answers: ${text}`, {
    detail: `RTNETLINK answers: ${text}`,
    ...(netns ? { netns } : {}),
  });
}

export class Rtnetlink {
  readonly #libc: Libc;
  readonly #buf = new Uint8Array(65536);
  #host: number | undefined;
  #seq = 1;

  constructor(libc: Libc) {
    this.#libc = libc;
  }

  /**
   * `ip link add NAME … type veth peer name PEER … [netns PEERNETNS]` in the namespace at
   * `netnsPath` (this one when undefined).
   */
  createVeth(spec: VethSpec, peerNetnsPath: string | undefined, netnsPath: string | undefined): void {
    const what = `ip link add ${spec.name} type veth peer name ${spec.peerName}`;
    const peerFd = peerNetnsPath === undefined ? undefined : openNetns(peerNetnsPath);
    try {
      this.#in(netnsPath, (fd) => {
        this.#request(fd, newVethMessage(this.#seq++, spec, peerFd), what, netnsPath);
      });
    } finally {
      if (peerFd !== undefined) closeSync(peerFd);
    }
  }

  /**
   * The changes in order, in the namespace at `netnsPath`, stopping at the first failure: a
   * `NetlinuxBatchError` whose `index` is the failed change's (as `Netlinux.batch`).
   */
  apply(ops: readonly LinkOp[], netnsPath: string | undefined): void {
    this.#in(netnsPath, (fd) => {
      const index = new Map<string, number>();
      const ifindex = (dev: string, what: string) => {
        let i = index.get(dev);
        if (i === undefined) {
          i = this.#request(fd, getLinkMessage(this.#seq++, dev), what, netnsPath).ifindex;
          if (i === undefined) throw new NetlinuxError('failed', `${what}: no index for ${dev}`);
          index.set(dev, i);
        }
        return i;
      };
      ops.forEach((op, i) => {
        const what = describe(op);
        try {
          switch (op.op) {
            case 'up':
              this.#request(fd, linkUpMessage(this.#seq++, op.dev), what, netnsPath);
              break;
            case 'addr-add':
              this.#request(
                fd,
                newAddrMessage(this.#seq++, ifindex(op.dev, what), op.cidr, op.noDad === true),
                what,
                netnsPath,
              );
              break;
            case 'route-add':
              this.#request(
                fd,
                newRouteMessage(this.#seq++, {
                  dst: op.dst,
                  oif: ifindex(op.dev, what),
                  ...(op.gateway !== undefined ? { gateway: op.gateway } : {}),
                  ...(op.scope !== undefined ? { scope: op.scope } : {}),
                }),
                what,
                netnsPath,
              );
              break;
          }
        } catch (e) {
          const err = e instanceof NetlinuxError ? e : new NetlinuxError('failed', String(e));
          throw new NetlinuxBatchError(
            err.code,
            `${err.message} (batch command ${i + 1} of ${ops.length})`,
            i,
            { detail: err.detail, ...(netnsPath ? { netns: netnsPath } : {}) },
          );
        }
      });
    });
  }

  close(): void {
    if (this.#host !== undefined) this.#libc.close(this.#host);
    this.#host = undefined;
  }

  #hostSocket(): number {
    this.#host ??= this.#socket();
    return this.#host;
  }

  #socket(): number {
    const fd = this.#libc.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) throw errnoError(this.#libc.errno(), 'open an rtnetlink socket', undefined);
    return fd;
  }

  /** Runs `f` with a socket in the namespace at `netnsPath` (this one's when undefined). */
  #in<T>(netnsPath: string | undefined, f: (fd: number) => T): T {
    if (netnsPath === undefined) return f(this.#hostSocket());
    const fd = this.#socketIn(netnsPath);
    try {
      return f(fd);
    } finally {
      this.#libc.close(fd);
    }
  }

  /** A socket made inside the namespace at `path`; the thread is back in its own before returning. */
  #socketIn(path: string): number {
    const own = openSync('/proc/thread-self/ns/net', 'r');
    let target: number;
    try {
      target = openNetns(path);
    } catch (e) {
      closeSync(own);
      throw e;
    }
    try {
      if (this.#libc.setns(target, CLONE_NEWNET) !== 0) {
        throw errnoError(this.#libc.errno(), `enter network namespace ${path}`, undefined);
      }
      try {
        return this.#socket();
      } finally {
        if (this.#libc.setns(own, CLONE_NEWNET) !== 0) {
          // Never seen; if it happened, everything after would run in the pod's namespace.
          process.stderr.write(`fatal: cannot return to the original network namespace from ${path}\n`);
          process.exit(70);
        }
      }
    } finally {
      closeSync(target);
      closeSync(own);
    }
  }

  /** Sends one request and reads until its acknowledgement; a refusal is thrown as its errno. */
  #request(fd: number, msg: Uint8Array, what: string, netns: string | undefined): { ifindex?: number } {
    const seq = new DataView(msg.buffer, msg.byteOffset).getUint32(8, true);
    if (this.#libc.send(fd, msg) !== msg.length) throw errnoError(this.#libc.errno(), what, netns);
    const out: { ifindex?: number } = {};
    for (;;) {
      const n = this.#libc.recv(fd, this.#buf);
      if (n < 0) throw errnoError(this.#libc.errno(), what, netns);
      for (const r of parseReplies(this.#buf.subarray(0, n))) {
        if (r.seq !== seq) continue;
        if (r.type === RTM_NEWLINK && r.ifindex !== undefined) out.ifindex = r.ifindex;
        if (r.type === NLMSG_ERROR) {
          if (r.errno) throw errnoError(r.errno, what, netns);
          return out;
        }
      }
    }
  }
}

function openNetns(path: string): number {
  try {
    return openSync(path, 'r');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new NetlinuxError(
      code === 'ENOENT' ? 'not-found' : 'failed',
      `Cannot open network namespace ${path}: ${(e as Error).message}`,
      { netns: path },
    );
  }
}

function describe(op: LinkOp): string {
  switch (op.op) {
    case 'up':
      return `ip link set dev ${op.dev} up`;
    case 'addr-add':
      return `ip addr add ${op.cidr} dev ${op.dev}`;
    case 'route-add':
      return `ip route add ${op.dst}${op.gateway ? ` via ${op.gateway}` : ''} dev ${op.dev}${op.scope ? ` scope ${op.scope}` : ''}`;
  }
}
