/**
 * `@calico-ts/netlinux`: Linux networking primitives (network namespaces, links, veth, bridges,
 * VXLAN, addresses, routes, neighbours, FDB, sysctls) over iproute2. `Netlinux` takes a
 * `CommandRunner`, so a fake one can stand in; the free functions use a shared real one. A
 * scripted runner for tests is in `@calico-ts/netlinux/testing`.
 */
export {
  addAddr,
  addFdb,
  addNeighbour,
  addRoute,
  appendFdb,
  batch,
  createBridge,
  createNetns,
  createVethPair,
  createVxlan,
  delAddr,
  deleteLink,
  deleteNetns,
  delFdb,
  delNeighbour,
  delRoute,
  findLink,
  flushAddrs,
  getLink,
  getRoute,
  listAddrs,
  listFdb,
  listLinks,
  listNeighbours,
  listNetns,
  listRoutes,
  moveLinkToNetns,
  netlinux,
  netnsExists,
  readSysctl,
  renameLink,
  replaceAddr,
  replaceFdb,
  replaceNeighbour,
  replaceRoute,
  setLink,
  setLinkDown,
  setLinkMac,
  setLinkMaster,
  setLinkMtu,
  setLinkUp,
  writeSysctl,
  writeSysctls,
} from './default-netlinux.js';
export {
  isNetlinuxError,
  NETLINUX_ERROR_CODES,
  NetlinuxBatchError,
  NetlinuxError,
  type NetlinuxErrorCode,
} from './errors.js';
export {
  type CommandResult,
  type CommandRunner,
  NETNS_RUN_DIR,
  netnsPath,
  type RunOptions,
} from './exec/command-runner.js';
export { ProcessCommandRunner, type ProcessRunnerOptions } from './exec/process-runner.js';
export type { LinkChanges } from './ip-commands.js';
export { CALICO_HOST_MAC, isValidMac, normalizeMac, randomMac } from './mac.js';
export { isValidIfName, MAX_IFNAME_LEN } from './names.js';
export { Netlinux, type NetlinuxOptions, type Netns } from './netlinux.js';
export type {
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
  RouteType,
  VethSpec,
  VxlanInfo,
  VxlanSpec,
} from './types.js';
