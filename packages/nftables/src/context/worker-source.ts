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
  // A raw netfilter netlink socket for what libnftables cannot give cheaply: the handles of one
  // chain's rules (its \`list chain\` fetches the elements of every set in the namespace first).
  let netlink;
  try {
    const libc = koffi.load(init.libc);
    netlink = {
      socket: libc.func('int socket(int domain, int type, int protocol)'),
      send: libc.func('intptr_t send(int fd, void *buf, size_t len, int flags)'),
      recv: libc.func('intptr_t recv(int fd, void *buf, size_t len, int flags)'),
      close: libc.func('int close(int fd)'),
    };
  } catch (e) {
    netlink = undefined;
  }
  const NLA_ALIGN = (n) => (n + 3) & ~3;
  const attr = (type, value) => {
    const b = Buffer.alloc(NLA_ALIGN(4 + value.length));
    b.writeUInt16LE(4 + value.length, 0);
    b.writeUInt16LE(type, 2);
    value.copy(b, 4);
    return b;
  };
  // NFT_MSG_GETRULE dump of one chain: [[handle, comment], ...] in the chain's order.
  const ruleHandles = (family, table, chain) => {
    if (!netlink) throw new Error('no libc socket functions');
    const fd = netlink.socket(16 /* AF_NETLINK */, 3 /* SOCK_RAW */, 12 /* NETLINK_NETFILTER */);
    if (fd < 0) throw new Error('netlink socket: ' + errnoName(koffi.errno()));
    try {
      const body = Buffer.concat([
        Buffer.from([family === 'ip6' ? 10 : 2, 0, 0, 0]),
        attr(1 /* NFTA_RULE_TABLE */, Buffer.from(table + '\0')),
        attr(2 /* NFTA_RULE_CHAIN */, Buffer.from(chain + '\0')),
      ]);
      const msg = Buffer.alloc(16 + body.length);
      msg.writeUInt32LE(msg.length, 0);
      msg.writeUInt16LE((10 << 8) | 7 /* NFNL_SUBSYS_NFTABLES, NFT_MSG_GETRULE */, 4);
      msg.writeUInt16LE(0x1 | 0x300 /* NLM_F_REQUEST | NLM_F_DUMP */, 6);
      msg.writeUInt32LE(1, 8);
      body.copy(msg, 16);
      if (netlink.send(fd, msg, msg.length, 0) !== msg.length) throw new Error('netlink send: ' + errnoName(koffi.errno()));
      const out = [];
      const buf = Buffer.alloc(1 << 16);
      for (;;) {
        const n = Number(netlink.recv(fd, buf, buf.length, 0));
        if (n < 0) throw new Error('netlink recv: ' + errnoName(koffi.errno()));
        for (let off = 0; off + 16 <= n; ) {
          const len = buf.readUInt32LE(off);
          const type = buf.readUInt16LE(off + 4);
          if (len < 16) throw new Error('netlink: bad message length');
          if (type === 3 /* NLMSG_DONE */) return out;
          if (type === 2 /* NLMSG_ERROR */) {
            const err = -buf.readInt32LE(off + 16);
            if (err !== 0) throw Object.assign(new Error('netlink: ' + errnoName(err)), { errno: errnoName(err) });
          } else {
            let handle;
            let comment;
            for (let a = off + 20; a + 4 <= off + len; ) {
              const alen = buf.readUInt16LE(a);
              const atype = buf.readUInt16LE(a + 2) & 0x3fff;
              if (alen < 4) break;
              if (atype === 3 /* NFTA_RULE_HANDLE */) handle = Number(buf.readBigUInt64BE(a + 4));
              if (atype === 7 /* NFTA_RULE_USERDATA */) {
                // TLVs of one byte type, one byte length; the comment is type 0, NUL-terminated.
                for (let u = a + 4; u + 2 <= a + alen; ) {
                  const ut = buf[u];
                  const ul = buf[u + 1];
                  if (ut === 0) comment = buf.toString('utf8', u + 2, u + 2 + ul).replace(/\0.*$/s, '');
                  u += 2 + ul;
                }
              }
              a += NLA_ALIGN(alen);
            }
            if (handle !== undefined) out.push([handle, comment === undefined ? null : comment]);
          }
          off += NLA_ALIGN(len);
        }
      }
    } finally {
      netlink.close(fd);
    }
  };

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
    if (req.kind === 'rule-handles') {
      try {
        const rules = ruleHandles(req.family, req.table, req.chain);
        parentPort.postMessage({ kind: 'rule-handles', id: req.id, rules });
      } catch (e) {
        parentPort.postMessage({ kind: 'rule-handles', id: req.id, rules: [], error: String((e && e.message) || e), errno: e && e.errno });
      }
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
