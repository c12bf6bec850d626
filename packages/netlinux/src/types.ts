/**
 * The shapes netlinux reads from and writes to the kernel. Addresses are strings in the forms
 * iproute2 prints (`198.18.0.1`, `fe80::1`), prefixes always carry their length
 * (`198.18.0.1/32`, `0.0.0.0/0`), MACs are lower-case colon-separated.
 */

export type IpFamily = 4 | 6;

/** One network device as `ip -d -json link show` reports it. */
export interface Link {
  name: string;
  index: number;
  mtu: number;
  /** Lower-case `aa:bb:cc:dd:ee:ff`; `00:00:00:00:00:00` for loopback. */
  mac: string;
  /** RFC 2863 state as the kernel reports it: `UP`, `DOWN`, `UNKNOWN`, `LOWERLAYERDOWN`, … */
  operstate: string;
  /** rtnetlink kind (`veth`, `bridge`, `vxlan`, …); `''` for a device without one (loopback, NICs). */
  kind: string;
  /** Name of the bridge (or bond) this device is enslaved to. */
  master?: string;
  /** Interface flags as printed: `UP`, `LOWER_UP`, `BROADCAST`, `NOARP`, … */
  flags: string[];
  /** Administratively up (the `UP` flag), whatever the carrier. */
  up: boolean;
  /** For a veth: ifindex of the peer (in `peerNetnsId`'s namespace when that is set). */
  peerIndex?: number;
  /** For a veth whose peer lives in another namespace: that namespace's id as seen from here. */
  peerNetnsId?: number;
  /** Set for `kind === 'vxlan'`. */
  vxlan?: VxlanInfo;
}

export interface VxlanInfo {
  vni: number;
  /** UDP destination port. */
  port: number;
  local?: string;
  /** Parent device the tunnel is bound to. */
  dev?: string;
  learning: boolean;
}

export interface VethSpec {
  /** Device created in the namespace the call runs in (the host end, e.g. `cali12345678901`). */
  name: string;
  /** The other end (the container end, e.g. `eth0`). */
  peerName: string;
  /** Create the peer directly in this namespace (name or path), so its name never collides here. */
  peerNetns?: string;
  /** MTU of both ends. */
  mtu?: number;
  /** MAC of `name` (Calico's host end: `ee:ee:ee:ee:ee:ee`). */
  mac?: string;
  /** MAC of `peerName`. */
  peerMac?: string;
  /** TX and RX queues of both ends. */
  numQueues?: number;
}

export interface BridgeSpec {
  name: string;
  mtu?: number;
  mac?: string;
}

export interface VxlanSpec {
  name: string;
  /** VXLAN network identifier (Calico: 4096 for IPv4, 4098 for IPv6). */
  vni: number;
  /** UDP destination port (Calico: 4789). */
  port: number;
  /** Source address of the tunnel. */
  local?: string;
  /** Parent device. */
  dev?: string;
  /** MAC learning; default false (Calico programs FDB entries itself). */
  learning?: boolean;
  mtu?: number;
  mac?: string;
}

/**
 * An IPv4-in-IPv4 tunnel device (`ip link add <name> type ipip`). Creating one loads the kernel's
 * `ipip` module if needed, and loading it makes the fallback device `tunl0` in every namespace: a
 * request for `tunl0` itself then fails `exists`, and the device is there (what Calico relies on).
 * Without the module the kernel answers "Unknown device type" (`invalid`).
 */
export interface IpipSpec {
  name: string;
  mtu?: number;
}

/** One address as `ip -json addr show` reports it. */
export interface Addr {
  /** Device name. */
  dev: string;
  /** Device ifindex. */
  index: number;
  family: IpFamily;
  /** `address/prefixLen`. */
  cidr: string;
  address: string;
  prefixLen: number;
  /** `global`, `link`, `host`, … */
  scope: string;
  /** Set when the address is excluded from duplicate address detection. */
  noDad: boolean;
  /** IPv6 DAD has not finished. */
  tentative: boolean;
}

export interface AddrOptions {
  /** `global` (default), `link`, `host` or a number. */
  scope?: string;
  /** IPv6: skip duplicate address detection (`nodad`). */
  noDad?: boolean;
}

export interface AddrFilter {
  dev?: string;
  family?: IpFamily;
}

export type RouteType =
  | 'unicast'
  | 'local'
  | 'broadcast'
  | 'blackhole'
  | 'unreachable'
  | 'prohibit'
  | 'throw';

/** One route as `ip -json route show` reports it, normalised. */
export interface Route {
  family: IpFamily;
  /** Destination prefix; the default route is `0.0.0.0/0` or `::/0`, a host route `/32` or `/128`. */
  dst: string;
  dev?: string;
  gateway?: string;
  /** `link`, `host`, `global`, … (absent when the kernel says universe/global). */
  scope?: string;
  /** `kernel`, `boot`, `static`, `bird`, or a number as text. */
  proto?: string;
  metric?: number;
  onlink?: boolean;
  /** Absent for the main table. */
  table?: string;
  /** Absent for `unicast`. */
  type?: RouteType;
  /** Preferred source address. */
  src?: string;
  /** Multipath next hops (ECMP); `gateway`/`dev` are then absent. */
  nexthops?: { gateway?: string; dev?: string; weight?: number; onlink?: boolean }[];
}

/** A route to add, replace or delete. */
export interface RouteSpec {
  /** Prefix, address (taken as a host route) or `default` (then give `family` for IPv6). */
  dst: string;
  family?: IpFamily;
  dev?: string;
  gateway?: string;
  scope?: string;
  proto?: string | number;
  metric?: number;
  onlink?: boolean;
  table?: string | number;
  type?: RouteType;
  src?: string;
}

export interface RouteFilter {
  /** A table number or `main` (default), `local`, `all`. */
  table?: string | number;
  /** Default: both families. */
  family?: IpFamily;
  dev?: string;
}

/** Neighbour (ARP/NDP) entry. */
export interface Neighbour {
  family: IpFamily;
  dst: string;
  dev: string;
  lladdr?: string;
  /** NUD states, lower case: `permanent`, `reachable`, `stale`, `noarp`, `failed`, … */
  state: string[];
  router: boolean;
  proxy: boolean;
}

export interface NeighbourSpec {
  dst: string;
  dev: string;
  lladdr?: string;
  /** NUD state to set; default `permanent`. */
  state?: 'permanent' | 'noarp' | 'reachable' | 'stale' | 'none' | 'delay' | 'probe' | 'incomplete';
}

export interface NeighbourFilter {
  dev?: string;
  family?: IpFamily;
}

/** Bridge forwarding database entry (for VXLAN: remote VTEP MAC → remote VTEP address). */
export interface FdbEntry {
  mac: string;
  /** Absent in an entry listed with a `dev` filter (then it is that device). */
  dev?: string;
  /** Remote VTEP address. */
  dst?: string;
  vni?: number;
  port?: number;
  master?: string;
  /** `self`, `master`, `extern_learn`, … */
  flags: string[];
  /** `permanent`, `static` or `''` (dynamic). */
  state: string;
}

export interface FdbSpec {
  mac: string;
  dev: string;
  /** Remote VTEP address. */
  dst?: string;
  vni?: number;
  port?: number;
  /** Default true: program the device's own table (what a VXLAN device needs). */
  self?: boolean;
  /** Default true: `permanent`. */
  permanent?: boolean;
}

export interface IgnoreMissing {
  /** Succeed when the object (or the namespace) is already gone. */
  ignoreMissing?: boolean;
}

/** One change to an interface, for `Netlinux.apply` (a typed subset of what `batch` runs). */
export type LinkOp =
  | { op: 'up'; dev: string }
  | { op: 'addr-add'; dev: string; cidr: string; noDad?: boolean }
  | { op: 'route-add'; dev: string; dst: string; gateway?: string; scope?: 'link' | 'host' | 'global' };
