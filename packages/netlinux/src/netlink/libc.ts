/**
 * The five libc calls rtnetlink needs (socket, setns, send, recv, close) through the runtime's
 * foreign-function interface: `bun:ffi` under Bun (the native executables), koffi under Node when
 * it is installed. `undefined` when neither is available: callers then use iproute2.
 *
 * Module names are held in variables so bundlers leave them alone: `bun:ffi` exists only inside
 * Bun, and koffi is a native module that is found at run time, never bundled.
 */

export interface Libc {
  /** Each returns what libc returns (-1 on failure; then `errno()` says why). */
  socket(domain: number, type: number, protocol: number): number;
  setns(fd: number, nstype: number): number;
  send(fd: number, buf: Uint8Array): number;
  recv(fd: number, buf: Uint8Array): number;
  close(fd: number): number;
  errno(): number;
}

const BUN_FFI = 'bun:ffi';
const KOFFI = 'koffi';
const LIBC = 'libc.so.6';

let loaded: Promise<Libc | undefined> | undefined;

/** The libc calls, loaded once per process; `undefined` when this runtime cannot call them. */
export function loadLibc(): Promise<Libc | undefined> {
  loaded ??= (typeof (globalThis as { Bun?: unknown }).Bun === 'object' ? viaBun() : viaKoffi()).catch(
    () => undefined,
  );
  return loaded;
}

async function viaBun(): Promise<Libc> {
  // biome-ignore lint/suspicious/noExplicitAny: bun:ffi has no types in this Node workspace
  const ffi: any = await import(BUN_FFI);
  const { symbols: s } = ffi.dlopen(LIBC, {
    socket: { args: ['i32', 'i32', 'i32'], returns: 'i32' },
    setns: { args: ['i32', 'i32'], returns: 'i32' },
    send: { args: ['i32', 'ptr', 'u64', 'i32'], returns: 'i64_fast' },
    recv: { args: ['i32', 'ptr', 'u64', 'i32'], returns: 'i64_fast' },
    close: { args: ['i32'], returns: 'i32' },
    __errno_location: { args: [], returns: 'ptr' },
  });
  return {
    socket: (d, t, p) => s.socket(d, t, p),
    setns: (fd, t) => s.setns(fd, t),
    send: (fd, buf) => Number(s.send(fd, buf, buf.length, 0)),
    recv: (fd, buf) => Number(s.recv(fd, buf, buf.length, 0)),
    close: (fd) => s.close(fd),
    errno: () => ffi.read.i32(s.__errno_location(), 0),
  };
}

async function viaKoffi(): Promise<Libc> {
  // biome-ignore lint/suspicious/noExplicitAny: koffi is optional and loaded by name at run time
  const mod: any = await import(KOFFI);
  const koffi = mod.default ?? mod;
  const lib = koffi.load(LIBC);
  const socket = lib.func('int socket(int, int, int)');
  const setns = lib.func('int setns(int, int)');
  const send = lib.func('long send(int, const uint8_t *, size_t, int)');
  const recv = lib.func('long recv(int, _Out_ uint8_t *, size_t, int)');
  const close = lib.func('int close(int)');
  return {
    socket: (d, t, p) => socket(d, t, p),
    setns: (fd, t) => setns(fd, t),
    send: (fd, buf) => Number(send(fd, buf, buf.length, 0)),
    recv: (fd, buf) => Number(recv(fd, buf, buf.length, 0)),
    close: (fd) => close(fd),
    errno: () => koffi.errno(),
  };
}
