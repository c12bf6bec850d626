/**
 * Argument builders: each returns the words after `ip` (or after `bridge` for FDB) for one change.
 * They check their input (names, MACs, addresses) and never emit global options such as `-6`, so
 * every result is also a valid line for {@link Netlinux.batch} (`ip -batch -`).
 */
import { NetlinuxError } from './errors.js';
import { ipFamily, parseCidr } from './ip.js';
import { normalizeMac } from './mac.js';
import { checkIfName, checkNetns } from './names.js';
import type {
  AddrOptions,
  BridgeSpec,
  FdbSpec,
  IpFamily,
  IpipSpec,
  LinkOp,
  NeighbourSpec,
  RouteSpec,
  VethSpec,
  VxlanSpec,
} from './types.js';

function positiveInt(what: string, n: number, max = 0xffffffff): string {
  if (!Number.isInteger(n) || n < 0 || n > max) {
    throw new NetlinuxError('invalid', `${what} must be an integer between 0 and ${max}, got ${n}`);
  }
  return String(n);
}

function mtuArgs(mtu: number | undefined): string[] {
  return mtu === undefined ? [] : ['mtu', positiveInt('mtu', mtu)];
}

function macArgs(mac: string | undefined): string[] {
  return mac === undefined ? [] : ['address', normalizeMac(mac)];
}

function queueArgs(n: number | undefined): string[] {
  if (n === undefined) return [];
  const q = positiveInt('numQueues', n, 4096);
  return ['numtxqueues', q, 'numrxqueues', q];
}

function checkAddress(addr: string): string {
  if (addr.includes('/')) throw new NetlinuxError('invalid', `expected an address, got a prefix: ${addr}`);
  ipFamily(addr);
  return addr;
}

/** A plain word for iproute2 (scope, proto, table names); no spaces, quotes or `#`. */
function word(what: string, value: string | number): string {
  const s = String(value);
  if (!/^[A-Za-z0-9_.:-]+$/.test(s))
    throw new NetlinuxError('invalid', `invalid ${what}: ${JSON.stringify(s)}`);
  return s;
}

// ---- links ------------------------------------------------------------------------------------

/** `link add <name> … type veth peer name <peer> … [netns <peerNetns>]` */
export function vethAddArgs(spec: VethSpec): string[] {
  return [
    'link',
    'add',
    checkIfName(spec.name),
    ...macArgs(spec.mac),
    ...mtuArgs(spec.mtu),
    ...queueArgs(spec.numQueues),
    'type',
    'veth',
    'peer',
    'name',
    checkIfName(spec.peerName),
    ...macArgs(spec.peerMac),
    ...mtuArgs(spec.mtu),
    ...queueArgs(spec.numQueues),
    ...(spec.peerNetns === undefined ? [] : ['netns', checkNetns(spec.peerNetns)]),
  ];
}

export function bridgeAddArgs(spec: BridgeSpec): string[] {
  return [
    'link',
    'add',
    checkIfName(spec.name),
    ...macArgs(spec.mac),
    ...mtuArgs(spec.mtu),
    'type',
    'bridge',
  ];
}

export function vxlanAddArgs(spec: VxlanSpec): string[] {
  return [
    'link',
    'add',
    checkIfName(spec.name),
    ...macArgs(spec.mac),
    ...mtuArgs(spec.mtu),
    'type',
    'vxlan',
    'id',
    positiveInt('vni', spec.vni, 0xffffff),
    'dstport',
    positiveInt('port', spec.port, 0xffff),
    ...(spec.local === undefined ? [] : ['local', checkAddress(spec.local)]),
    ...(spec.dev === undefined ? [] : ['dev', checkIfName(spec.dev)]),
    spec.learning ? 'learning' : 'nolearning',
  ];
}

export function ipipAddArgs(spec: IpipSpec): string[] {
  return ['link', 'add', checkIfName(spec.name), ...mtuArgs(spec.mtu), 'type', 'ipip'];
}

export interface LinkChanges {
  up?: boolean;
  mtu?: number;
  mac?: string;
  /** Move to this namespace (name or path). */
  netns?: string;
  /** Rename. */
  name?: string;
  /** Enslave to this bridge; `null` releases it (`nomaster`). */
  master?: string | null;
}

/** `link set dev <name> …`: several attribute changes in one netlink request. */
export function linkSetArgs(name: string, changes: LinkChanges): string[] {
  const args = ['link', 'set', 'dev', checkIfName(name)];
  if (changes.name !== undefined) args.push('name', checkIfName(changes.name));
  if (changes.mtu !== undefined) args.push(...mtuArgs(changes.mtu));
  if (changes.mac !== undefined) args.push(...macArgs(changes.mac));
  if (changes.master === null) args.push('nomaster');
  else if (changes.master !== undefined) args.push('master', checkIfName(changes.master));
  if (changes.netns !== undefined) args.push('netns', checkNetns(changes.netns));
  if (changes.up !== undefined) args.push(changes.up ? 'up' : 'down');
  if (args.length === 4) throw new NetlinuxError('invalid', `no change given for link ${name}`);
  return args;
}

export function linkDelArgs(name: string): string[] {
  return ['link', 'del', 'dev', checkIfName(name)];
}

// ---- addresses --------------------------------------------------------------------------------

function addrArgs(
  verb: 'add' | 'del' | 'replace',
  dev: string,
  cidr: string,
  opts: AddrOptions = {},
): string[] {
  const { address, prefixLen } = parseCidr(cidr);
  const args = ['addr', verb, `${address}/${prefixLen}`, 'dev', checkIfName(dev)];
  if (opts.scope !== undefined) args.push('scope', word('scope', opts.scope));
  if (opts.noDad) args.push('nodad');
  return args;
}

/** `addr add <cidr> dev <dev> [scope s] [nodad]`; an address without a length is a host prefix. */
export function addrAddArgs(dev: string, cidr: string, opts?: AddrOptions): string[] {
  return addrArgs('add', dev, cidr, opts);
}

export function addrReplaceArgs(dev: string, cidr: string, opts?: AddrOptions): string[] {
  return addrArgs('replace', dev, cidr, opts);
}

export function addrDelArgs(dev: string, cidr: string): string[] {
  return addrArgs('del', dev, cidr);
}

// ---- routes -----------------------------------------------------------------------------------

/** Family of a route spec: explicit, else from dst, gateway or src; `default` alone is IPv4. */
export function routeFamily(spec: RouteSpec): IpFamily {
  if (spec.family !== undefined) return spec.family;
  if (spec.dst !== 'default') return ipFamily(spec.dst);
  if (spec.gateway !== undefined) return ipFamily(spec.gateway);
  if (spec.src !== undefined) return ipFamily(spec.src);
  return 4;
}

/**
 * `route <verb> [type] <dst> [via gw] [dev d] [scope s] [proto p] [metric m] [table t] [src a] [onlink]`.
 * `default` is written as `0.0.0.0/0` or `::/0`, so no `-6` option is needed.
 */
export function routeArgs(verb: 'add' | 'replace' | 'del' | 'append', spec: RouteSpec): string[] {
  const family = routeFamily(spec);
  let dst: string;
  if (spec.dst === 'default') {
    dst = family === 4 ? '0.0.0.0/0' : '::/0';
  } else {
    const c = parseCidr(spec.dst);
    if (c.family !== family) throw new NetlinuxError('invalid', `route ${spec.dst} is not IPv${family}`);
    dst = `${c.address}/${c.prefixLen}`;
  }
  const args = ['route', verb];
  if (spec.type !== undefined && spec.type !== 'unicast') args.push(word('route type', spec.type));
  args.push(dst);
  if (spec.gateway !== undefined) args.push('via', checkAddress(spec.gateway));
  if (spec.dev !== undefined) args.push('dev', checkIfName(spec.dev));
  if (spec.scope !== undefined) args.push('scope', word('scope', spec.scope));
  if (spec.proto !== undefined) args.push('proto', word('proto', spec.proto));
  if (spec.metric !== undefined) args.push('metric', positiveInt('metric', spec.metric));
  if (spec.table !== undefined) args.push('table', word('table', spec.table));
  if (spec.src !== undefined) args.push('src', checkAddress(spec.src));
  if (spec.onlink) args.push('onlink');
  return args;
}

// ---- neighbours -------------------------------------------------------------------------------

/** `neigh add|replace <dst> [lladdr mac] dev <dev> nud <state>` (state default `permanent`). */
export function neighSetArgs(verb: 'add' | 'replace', spec: NeighbourSpec): string[] {
  const args = ['neigh', verb, checkAddress(spec.dst)];
  if (spec.lladdr !== undefined) args.push('lladdr', normalizeMac(spec.lladdr));
  args.push('dev', checkIfName(spec.dev), 'nud', word('nud state', spec.state ?? 'permanent'));
  return args;
}

export function neighDelArgs(spec: Pick<NeighbourSpec, 'dst' | 'dev'>): string[] {
  return ['neigh', 'del', checkAddress(spec.dst), 'dev', checkIfName(spec.dev)];
}

// ---- bridge FDB (the `bridge` tool) -------------------------------------------------------------

/** Words after `bridge`: `fdb <verb> <mac> dev <dev> [dst ip] [vni n] [port p] [self] [permanent]`. */
export function fdbArgs(verb: 'add' | 'append' | 'replace' | 'del', spec: FdbSpec): string[] {
  const args = ['fdb', verb, normalizeMac(spec.mac), 'dev', checkIfName(spec.dev)];
  if (spec.dst !== undefined) args.push('dst', checkAddress(spec.dst));
  if (spec.vni !== undefined) args.push('vni', positiveInt('vni', spec.vni, 0xffffff));
  if (spec.port !== undefined) args.push('port', positiveInt('port', spec.port, 0xffff));
  if (spec.self ?? true) args.push('self');
  if (verb !== 'del' && (spec.permanent ?? true)) args.push('permanent');
  return args;
}

// ---- batch ------------------------------------------------------------------------------------

/**
 * The stdin of `ip -batch -`: one command per line. Throws `invalid` for a word that the batch
 * reader would split or cut (whitespace, quotes, backslash, `#` which starts a comment) or an
 * empty command.
 */
export function batchInput(commands: readonly (readonly string[])[]): string {
  return commands
    .map((cmd, i) => {
      if (cmd.length === 0) throw new NetlinuxError('invalid', `batch command ${i + 1} is empty`);
      for (const w of cmd) {
        if (w === '' || /[\s"'\\#]/.test(w)) {
          throw new NetlinuxError(
            'invalid',
            `batch command ${i + 1} has a word iproute2 cannot read: ${JSON.stringify(w)}`,
          );
        }
      }
      return `${cmd.join(' ')}\n`;
    })
    .join('');
}

/** The 0-based index of the failed command from `Command failed -:<line>`, if printed. */
export function failedBatchIndex(stderr: string): number | undefined {
  const m = /Command failed -:(\d+)/.exec(stderr);
  return m ? Number(m[1]) - 1 : undefined;
}

/** The `ip` arguments of one {@link LinkOp}. */
export function linkOpArgs(op: LinkOp): string[] {
  switch (op.op) {
    case 'up':
      return linkSetArgs(op.dev, { up: true });
    case 'addr-add':
      return addrAddArgs(op.dev, op.cidr, op.noDad ? { noDad: true } : {});
    case 'route-add':
      return routeArgs('add', {
        dst: op.dst,
        dev: op.dev,
        ...(op.gateway !== undefined ? { gateway: op.gateway } : {}),
        ...(op.scope !== undefined ? { scope: op.scope } : {}),
      });
  }
}
