/**
 * The operations of a process-wide {@link Netlinux} that runs real `ip`/`bridge`/`nsenter` processes,
 * as free functions: `await setLinkUp('cali1')`. Code that wants a fake runner constructs its own
 * `Netlinux`.
 */
import { Netlinux } from './netlinux.js';

/** The shared instance behind the free functions. */
export const netlinux = new Netlinux();

export const batch = netlinux.batch.bind(netlinux);
export const createNetns = netlinux.createNetns.bind(netlinux);
export const deleteNetns = netlinux.deleteNetns.bind(netlinux);
export const listNetns = netlinux.listNetns.bind(netlinux);
export const netnsExists = netlinux.netnsExists.bind(netlinux);
export const listLinks = netlinux.listLinks.bind(netlinux);
export const getLink = netlinux.getLink.bind(netlinux);
export const findLink = netlinux.findLink.bind(netlinux);
export const createVethPair = netlinux.createVethPair.bind(netlinux);
export const createBridge = netlinux.createBridge.bind(netlinux);
export const createVxlan = netlinux.createVxlan.bind(netlinux);
export const setLink = netlinux.setLink.bind(netlinux);
export const setLinkUp = netlinux.setLinkUp.bind(netlinux);
export const setLinkDown = netlinux.setLinkDown.bind(netlinux);
export const setLinkMtu = netlinux.setLinkMtu.bind(netlinux);
export const setLinkMac = netlinux.setLinkMac.bind(netlinux);
export const setLinkMaster = netlinux.setLinkMaster.bind(netlinux);
export const moveLinkToNetns = netlinux.moveLinkToNetns.bind(netlinux);
export const renameLink = netlinux.renameLink.bind(netlinux);
export const deleteLink = netlinux.deleteLink.bind(netlinux);
export const listAddrs = netlinux.listAddrs.bind(netlinux);
export const addAddr = netlinux.addAddr.bind(netlinux);
export const replaceAddr = netlinux.replaceAddr.bind(netlinux);
export const delAddr = netlinux.delAddr.bind(netlinux);
export const flushAddrs = netlinux.flushAddrs.bind(netlinux);
export const listRoutes = netlinux.listRoutes.bind(netlinux);
export const addRoute = netlinux.addRoute.bind(netlinux);
export const replaceRoute = netlinux.replaceRoute.bind(netlinux);
export const delRoute = netlinux.delRoute.bind(netlinux);
export const getRoute = netlinux.getRoute.bind(netlinux);
export const listNeighbours = netlinux.listNeighbours.bind(netlinux);
export const addNeighbour = netlinux.addNeighbour.bind(netlinux);
export const replaceNeighbour = netlinux.replaceNeighbour.bind(netlinux);
export const delNeighbour = netlinux.delNeighbour.bind(netlinux);
export const listFdb = netlinux.listFdb.bind(netlinux);
export const addFdb = netlinux.addFdb.bind(netlinux);
export const replaceFdb = netlinux.replaceFdb.bind(netlinux);
export const appendFdb = netlinux.appendFdb.bind(netlinux);
export const delFdb = netlinux.delFdb.bind(netlinux);
export const readSysctl = netlinux.readSysctl.bind(netlinux);
export const writeSysctl = netlinux.writeSysctl.bind(netlinux);
export const writeSysctls = netlinux.writeSysctls.bind(netlinux);
