/**
 * The body of a context's worker thread, run with `new Worker(source, { eval: true })`.
 *
 * It is a string of plain CommonJS on purpose: a worker starts a fresh Node.js instance that can
 * load neither the package's TypeScript sources (in tests) nor rely on a bundler's layout (in
 * dist), and it must be tiny anyway. It does four things, in this order, all on its own thread:
 *
 *   1. load koffi, libc and libnftables;
 *   2. if asked, open the namespace file and `setns(fd, CLONE_NEWNET)` — this moves only the
 *      calling thread, so the caller's thread never changes namespace — and check through
 *      /proc/thread-self that the thread is now in that namespace;
 *   3. make one libnftables context (its netlink socket is opened on this thread, so it acts in
 *      this namespace for its whole life) with buffered output and error text;
 *   4. answer `run` requests one at a time: set flags, `nft_run_cmd_from_buffer`, read back both
 *      buffers. One call is one kernel transaction.
 *
 * Messages are described in worker-protocol.ts.
 */
export const WORKER_SOURCE = String.raw`'use strict';
(function main() {
  const { parentPort, workerData } = require('node:worker_threads');
  const fs = require('node:fs');
  const os = require('node:os');
  const init = workerData;
  const errnoName = (n) => {
    for (const [name, value] of Object.entries(os.constants.errno)) if (value === n) return name;
    return 'E' + n;
  };
  const fail = (stage, message, errno) =>
    parentPort.postMessage({ kind: 'init-failed', stage, message, errno });

  let koffi;
  try {
    koffi = require(init.koffiPath);
  } catch (e) {
    return fail('koffi', String((e && e.message) || e));
  }

  let nft;
  let setns;
  try {
    const lib = koffi.load(init.library);
    nft = {
      ctxNew: lib.func('void *nft_ctx_new(uint32_t flags)'),
      ctxFree: lib.func('void nft_ctx_free(void *ctx)'),
      setFlags: lib.func('void nft_ctx_output_set_flags(void *ctx, unsigned int flags)'),
      setDryRun: lib.func('void nft_ctx_set_dry_run(void *ctx, bool dry)'),
      bufferOutput: lib.func('int nft_ctx_buffer_output(void *ctx)'),
      bufferError: lib.func('int nft_ctx_buffer_error(void *ctx)'),
      getOutput: lib.func('const char *nft_ctx_get_output_buffer(void *ctx)'),
      getError: lib.func('const char *nft_ctx_get_error_buffer(void *ctx)'),
      run: lib.func('int nft_run_cmd_from_buffer(void *ctx, const uint8_t *buf)'),
    };
  } catch (e) {
    return fail('library', String((e && e.message) || e));
  }

  if (init.netnsPath !== undefined) {
    let fd;
    try {
      fd = fs.openSync(init.netnsPath, 'r');
    } catch (e) {
      return fail('netns-open', String((e && e.message) || e), e && e.code);
    }
    try {
      const libc = koffi.load(init.libc);
      setns = libc.func('int setns(int fd, int nstype)');
      const want = fs.fstatSync(fd);
      if (setns(fd, 0x40000000) !== 0) {
        const errno = errnoName(koffi.errno());
        return fail('setns', 'setns(' + init.netnsPath + ', CLONE_NEWNET) failed: ' + errno, errno);
      }
      const now = fs.statSync('/proc/thread-self/ns/net');
      if (now.ino !== want.ino || now.dev !== want.dev) {
        return fail('setns', init.netnsPath + ' is not a network namespace this thread could enter');
      }
    } catch (e) {
      return fail('setns', String((e && e.message) || e));
    } finally {
      fs.closeSync(fd);
    }
  }

  const TRIM_ABOVE = 1 << 20;
  let mallocTrim;
  try {
    mallocTrim = koffi.load(init.libc).func('int malloc_trim(size_t pad)');
  } catch (e) {
    mallocTrim = undefined;
  }
  // glibc's malloc statistics, summed over every thread's arena: libnftables allocates with malloc.
  let mallinfo2;
  try {
    const fields = ['arena', 'ordblks', 'smblks', 'hblks', 'hblkhd', 'usmblks', 'fsmblks', 'uordblks', 'fordblks', 'keepcost'];
    koffi.struct('calico_mallinfo2', Object.fromEntries(fields.map((f) => [f, 'size_t'])));
    mallinfo2 = koffi.load(init.libc).func('calico_mallinfo2 mallinfo2()');
  } catch (e) {
    mallinfo2 = undefined;
  }
  let ctx = nft.ctxNew(0);
  if (!ctx) return fail('context', 'nft_ctx_new returned NULL');
  if (nft.bufferOutput(ctx) !== 0 || nft.bufferError(ctx) !== 0) {
    nft.ctxFree(ctx);
    return fail('context', 'libnftables could not buffer its output');
  }
  parentPort.postMessage({ kind: 'ready' });

  parentPort.on('message', (req) => {
    if (req.kind === 'close') {
      if (ctx) nft.ctxFree(ctx);
      ctx = null;
      parentPort.close();
      return;
    }
    if (req.kind === 'memory') {
      // uordblks: bytes in use from the heaps; hblkhd: bytes in blocks malloc mmap'ed on its own.
      let mallocInUse;
      try {
        if (mallinfo2) {
          const m = mallinfo2();
          mallocInUse = Number(m.uordblks) + Number(m.hblkhd);
        }
      } catch (e) {
        mallocInUse = undefined;
      }
      parentPort.postMessage({ kind: 'memory', id: req.id, heapUsed: process.memoryUsage().heapUsed, mallocInUse });
      return;
    }
    if (!ctx) {
      parentPort.postMessage({ kind: 'result', id: req.id, rc: -1, output: '', error: '', crash: 'context closed' });
      return;
    }
    try {
      nft.setFlags(ctx, req.flags);
      nft.setDryRun(ctx, req.dryRun);
      const buf = Buffer.from(req.text + '\0', 'utf8');
      const t0 = process.hrtime.bigint();
      const rc = nft.run(ctx, buf);
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      // Reading a buffer also rewinds it, so the next run starts empty.
      const output = nft.getOutput(ctx) || '';
      const error = nft.getError(ctx) || '';
      // After a large batch, libnftables' cache holds a copy of all it loaded, and glibc keeps the
      // freed parse trees: a fresh context (same thread, so same namespace) and a trim give both
      // back. Small batches keep the context.
      if (req.text.length > TRIM_ABOVE) {
        const fresh = nft.ctxNew(0);
        if (fresh && nft.bufferOutput(fresh) === 0 && nft.bufferError(fresh) === 0) {
          nft.ctxFree(ctx);
          ctx = fresh;
        } else if (fresh) {
          nft.ctxFree(fresh);
        }
        if (mallocTrim) mallocTrim(0);
      }
      parentPort.postMessage({ kind: 'result', id: req.id, rc, output, error, ms });
    } catch (e) {
      parentPort.postMessage({ kind: 'result', id: req.id, rc: -1, output: '', error: '', crash: String((e && e.message) || e) });
    }
  });
})();
`;
