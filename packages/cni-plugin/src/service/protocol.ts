/**
 * The node-local plugin service: a warm process (calico-node, or `calico --serve`) that runs CNI
 * invocations on behalf of the `calico` / `calico-ipam` executables the runtime starts, so a pod's
 * ADD does not pay for loading the datastore code, connecting to etcd and running IPAM in a cold
 * process. The executable stays the CNI plugin: it reads its input, hands the whole invocation to
 * the service and prints what comes back; when there is no service it does the work itself.
 *
 * Wire format, one exchange per connection on a unix socket: the client writes one request as a
 * JSON line; the service writes one reply as JSON and closes.
 *
 * The service only runs an invocation whose caller is in its own network namespace (the host end of
 * a pod's veth is made in the caller's namespace); otherwise it declines and the caller runs it.
 */
import { statSync } from 'node:fs';
import type { Program } from '../program.js';

/** Where the executable looks for the service unless the network config says otherwise. */
export const DEFAULT_SERVICE_SOCKET = '/var/run/calico/cni-plugin.sock';
/** The network config key naming the service's socket; `""` means never use a service. */
export const SERVICE_SOCKET_KEY = 'service_socket';
export const PROTOCOL_VERSION = 1;
/** Commands worth handing over (VERSION and flags are answered faster than a connection). */
export const SERVED_COMMANDS: ReadonlySet<string> = new Set(['ADD', 'DEL', 'CHECK', 'STATUS', 'GC']);
/** Largest request or reply accepted, bytes. */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

export interface ServiceRequest {
  v: typeof PROTOCOL_VERSION;
  program: Program;
  /** The invocation's environment (CNI_* and the datastore variables). */
  env: Record<string, string>;
  /** The network config as received on stdin. */
  stdin: string;
  /** The real path of the executable the runtime started (for in-process calico-ipam). */
  self?: string;
  /** The caller's network namespace, `dev:inode` of /proc/self/ns/net. */
  netns: string;
  /** The caller's PID, for the service's log. */
  pid: number;
}

export type ServiceReply =
  | { v: typeof PROTOCOL_VERSION; stdout: string; stderr: string; exitCode: number }
  /** Not run (another network namespace, shutting down): the caller runs it itself. */
  | { v: typeof PROTOCOL_VERSION; declined: string };

/**
 * The socket to hand this invocation to: the config's `service_socket`, or the default when the
 * key is absent; undefined when the key is `""` or the config cannot be read here (the plugin then
 * runs directly and reports the config error itself).
 */
export function serviceSocketFor(stdin: string): string | undefined {
  let conf: unknown;
  try {
    conf = JSON.parse(stdin);
  } catch {
    return undefined;
  }
  if (conf === null || typeof conf !== 'object' || Array.isArray(conf)) return undefined;
  const v = (conf as Record<string, unknown>)[SERVICE_SOCKET_KEY];
  if (v === undefined) return DEFAULT_SERVICE_SOCKET;
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** This process's network namespace as `dev:inode`, the identity two processes can compare. */
export function ownNetnsId(): string {
  const st = statSync('/proc/self/ns/net');
  return `${st.dev}:${st.ino}`;
}
