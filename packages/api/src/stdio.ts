/**
 * Standard streams for one-shot executables (calicoctl, the CNI plugins), written and read with
 * plain synchronous file-descriptor calls.
 *
 * Why: in the native (bun-compiled) executables, the first touch of `process.stdout`,
 * `process.stderr` or `process.stdin` builds Node's stream machinery, about 12 ms of a ~20 ms
 * start. A process that prints one result and exits needs none of it. Output written here is on
 * its way to the reader when the call returns, so exiting right after loses nothing.
 *
 * A descriptor inherited in non-blocking mode (EAGAIN) is waited on briefly and retried.
 */
import { fstatSync, readSync, writeSync } from 'node:fs';

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const pause = new Int32Array(new SharedArrayBuffer(4));

function wouldBlock(e: unknown): boolean {
  return (e as NodeJS.ErrnoException | undefined)?.code === 'EAGAIN';
}

/** Writes all of `text` to descriptor `fd`. */
export function writeAllSync(fd: number, text: string | Uint8Array): void {
  const buf = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  let off = 0;
  while (off < buf.length) {
    try {
      off += writeSync(fd, buf, off, buf.length - off);
    } catch (e) {
      if (!wouldBlock(e)) throw e;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}

/** Writes to standard output. A closed reader (EPIPE) ends the output quietly, as a pipe to `head` should. */
export function writeStdout(text: string | Uint8Array): void {
  try {
    writeAllSync(STDOUT, text);
  } catch (e) {
    if ((e as NodeJS.ErrnoException | undefined)?.code !== 'EPIPE') throw e;
  }
}

/** Writes to standard error; a log line that cannot be written is dropped. */
export function writeStderr(text: string | Uint8Array): void {
  try {
    writeAllSync(STDERR, text);
  } catch {
    // nowhere left to report it
  }
}

/**
 * All of standard input up to end of file. With `skipTerminal`, a terminal (any character device;
 * `node:tty` alone costs ~4 ms to load) reads as '' instead of waiting for someone to type.
 */
export function readStdinSync(options: { skipTerminal?: boolean } = {}): string {
  if (options.skipTerminal && isCharacterDevice(STDIN)) return '';
  const chunks: Buffer[] = [];
  for (;;) {
    const chunk = Buffer.allocUnsafe(65536);
    let n: number;
    try {
      n = readSync(STDIN, chunk, 0, chunk.length, null);
    } catch (e) {
      if (wouldBlock(e)) {
        Atomics.wait(pause, 0, 0, 1);
        continue;
      }
      // No standard input at all (closed descriptor) reads as empty.
      if ((e as NodeJS.ErrnoException | undefined)?.code === 'EBADF') break;
      throw e;
    }
    if (n === 0) break;
    chunks.push(chunk.subarray(0, n));
  }
  return Buffer.concat(chunks).toString('utf8');
}

function isCharacterDevice(fd: number): boolean {
  try {
    return fstatSync(fd).isCharacterDevice();
  } catch {
    return false;
  }
}
