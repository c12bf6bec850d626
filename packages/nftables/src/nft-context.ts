/**
 * NftContext: a libnftables context (through koffi) living in one network namespace.
 *
 * Design
 *   caller thread                         worker thread (one per context)
 *   ─────────────                         ──────────────────────────────
 *   NftContext.open({ netns }) ─spawn──►  load libnftables; open /run/netns/<name>;
 *                                         setns(fd, CLONE_NEWNET)  ← moves this thread only
 *                              ◄─ready──  nft_ctx_new (its netlink socket lives in the namespace)
 *   run(commands) ── JSON text ───────►   nft_run_cmd_from_buffer  (one call = one transaction)
 *                 ◄─ rc, output, error ─  nft_ctx_get_output_buffer / _error_buffer
 *   parse JSON, classify errors once
 *
 * libnftables and setns act on the calling thread, so a context made after `setns` stays in that
 * namespace; doing it on a dedicated worker keeps the caller's thread (and everything else in the
 * process) in its own namespace. Contexts without `netns` use a worker too, so a large batch never
 * blocks the caller's event loop.
 *
 * API
 *   A Transaction (or JSON commands, or nft text) in, parsed JSON out, the same output `nft -j` prints. Failures are
 *   `NftablesError`s whose code comes from nft's error text.
 *
 * Thread-safety
 *   Calls are queued and run one after the other on the worker, in call order. The worker holds a
 *   reference on the event loop only while a call is outstanding, so an idle context does not keep
 *   the process alive; still, close() it.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import {
  type InitStage,
  type MemoryReply,
  NFT_CTX_OUTPUT_ECHO,
  NFT_CTX_OUTPUT_JSON,
  type RuleHandlesReply,
  type RunReply,
  type RunRequest,
  type WorkerHello,
  type WorkerInit,
  type WorkerRequest,
} from './context/worker-protocol.js';
import { WORKER_SOURCE } from './context/worker-source.js';
import { classifyErrno, NftablesError, type NftablesErrorCode, nftErrorFromText } from './errors.js';
import {
  findTable,
  type NftRuleset,
  type NftTableState,
  nftablesItems,
  parseRuleset,
} from './json/ruleset.js';
import type { NftFamily, NftResult, NftRunOptions } from './json/types.js';
import type { NftClient, NftRuleHandle, NftTableName } from './nft-client.js';
import { batchText, type NftBatch } from './transaction.js';

export interface NftContextOptions {
  /**
   * The network namespace to act in: a name under /run/netns (as `ip netns add` makes) or a path
   * such as /proc/<pid>/ns/net. Absent: the caller's own namespace.
   */
  netns?: string;
  /** The libnftables shared object; default `libnftables.so.1` (Debian `libnftables1`). */
  library?: string;
}

const DEFAULT_LIBRARY = 'libnftables.so.1';
const LIBC = 'libc.so.6';

/** The namespace file for a name or path; names are checked so they cannot leave /run/netns. */
export function netnsPath(netns: string): string {
  if (netns.startsWith('/')) return netns;
  if (netns === '' || netns === '.' || netns === '..' || netns.includes('/') || netns.includes('\0')) {
    throw new NftablesError('invalid', `bad network namespace name "${netns}"`);
  }
  return `/run/netns/${netns}`;
}

function initErrorCode(stage: InitStage, errno: string | undefined): NftablesErrorCode {
  switch (stage) {
    case 'koffi':
    case 'library':
      return 'unavailable';
    case 'netns-open':
    case 'setns':
      return classifyErrno(errno);
    case 'context':
      return 'failed';
  }
}

interface Pending {
  resolve: (reply: RunReply | MemoryReply | RuleHandlesReply) => void;
  reject: (e: unknown) => void;
}

/** Memory figures of an {@link NftContext}, from its worker thread. */
export interface NftContextMemory {
  /** The worker thread's own JS heap in use, bytes. */
  readonly workerHeapUsed: number;
  /**
   * Bytes glibc's malloc has handed out and not had back, over every thread of the process:
   * libnftables' parse trees and cache, and Node's own native allocations. Undefined when the C
   * library has no `mallinfo2`.
   */
  readonly mallocInUse: number | undefined;
}

/** A libnftables context in a worker, in Felix's network namespace or the one named. */
export class NftContext implements NftClient {
  readonly netns: string | undefined;
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #closed = false;
  #exitError: NftablesError | undefined;
  readonly #exited: Promise<void>;

  private constructor(worker: Worker, netns: string | undefined) {
    this.#worker = worker;
    this.netns = netns;
    this.#exited = new Promise((resolve) => {
      worker.once('exit', () => {
        this.#closed = true;
        const err =
          this.#exitError ?? new NftablesError('failed', 'the nftables context is closed', this.#errorOpts());
        for (const p of this.#pending.values()) p.reject(err);
        this.#pending.clear();
        resolve();
      });
    });
    worker.on('error', (e) => {
      this.#exitError = new NftablesError('failed', `the nftables worker failed: ${String(e)}`, {
        ...this.#errorOpts(),
        cause: e,
      });
    });
    worker.on('message', (msg: RunReply | MemoryReply | RuleHandlesReply) => {
      const p = this.#pending.get(msg.id);
      if (!p) return;
      this.#pending.delete(msg.id);
      // Idle, the worker does not keep the process alive; closing, it must until it has exited,
      // or a close() awaited behind a reply would never settle.
      if (this.#pending.size === 0 && !this.#closed) worker.unref();
      p.resolve(msg);
    });
    worker.unref();
  }

  /**
   * Makes a context, in `opts.netns` when given. Fails with `unavailable` when libnftables (or
   * koffi's native part) cannot be loaded, `not-found` when the namespace does not exist,
   * `permission` when the process may not enter it.
   */
  static async open(opts: NftContextOptions = {}): Promise<NftContext> {
    const init: WorkerInit = {
      koffiPath: createRequire(import.meta.url).resolve('koffi'),
      library: opts.library ?? DEFAULT_LIBRARY,
      libc: LIBC,
      ...(opts.netns === undefined ? {} : { netnsPath: netnsPath(opts.netns) }),
    };
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: init });
    const errorOpts = opts.netns === undefined ? {} : { netns: opts.netns };
    const hello = await new Promise<WorkerHello>((resolve, reject) => {
      const onError = (e: unknown) =>
        reject(
          new NftablesError('failed', `the nftables worker failed to start: ${String(e)}`, {
            ...errorOpts,
            cause: e,
          }),
        );
      const onExit = (code: number) =>
        reject(
          new NftablesError('failed', `the nftables worker exited (${code}) before it was ready`, errorOpts),
        );
      worker.once('error', onError);
      worker.once('exit', onExit);
      worker.once('message', (m: WorkerHello) => {
        worker.off('error', onError);
        worker.off('exit', onExit);
        resolve(m);
      });
    });
    if (hello.kind === 'init-failed') {
      await worker.terminate();
      const code = initErrorCode(hello.stage, hello.errno);
      const where = opts.netns === undefined ? '' : ` in netns ${opts.netns}`;
      const what = hello.stage === 'library' ? `${init.library}: ${hello.message}` : hello.message;
      throw new NftablesError(code, `cannot open an nftables context${where}: ${what}`, {
        ...errorOpts,
        detail: hello.message,
      });
    }
    return new NftContext(worker, opts.netns);
  }

  #errorOpts(): { netns?: string } {
    return this.netns === undefined ? {} : { netns: this.netns };
  }

  #call(text: string, opts: NftRunOptions): Promise<RunReply> {
    const req = (id: number): RunRequest => ({
      kind: 'run',
      id,
      text,
      flags: NFT_CTX_OUTPUT_JSON | (opts.echo ? NFT_CTX_OUTPUT_ECHO : 0),
      dryRun: opts.dryRun === true,
    });
    return this.#send(req) as Promise<RunReply>;
  }

  #send(req: (id: number) => WorkerRequest): Promise<RunReply | MemoryReply | RuleHandlesReply> {
    if (this.#closed) {
      return Promise.reject(new NftablesError('failed', 'the nftables context is closed', this.#errorOpts()));
    }
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.ref();
      this.#worker.postMessage(req(id));
    });
  }

  /**
   * The worker's memory: its own JS heap, and what malloc holds for the whole process (see
   * {@link NftContextMemory}). Queued behind the calls made before it.
   */
  async memoryUsage(): Promise<NftContextMemory> {
    const reply = (await this.#send((id) => ({ kind: 'memory', id }))) as MemoryReply;
    return { workerHeapUsed: reply.heapUsed, mallocInUse: reply.mallocInUse };
  }

  async run(batch: NftBatch, opts: NftRunOptions = {}): Promise<NftResult> {
    const text = batchText(batch);
    if (text === undefined) return { items: [], output: '', warnings: '' };
    const reply = await this.#call(text, opts);
    if (reply.crash !== undefined) {
      throw new NftablesError('failed', `libnftables call failed: ${reply.crash}`, this.#errorOpts());
    }
    if (reply.rc !== 0) throw nftErrorFromText(reply.error, this.netns);
    return {
      items: outputItems(reply.output),
      output: reply.output,
      warnings: reply.error,
      ...(reply.ms === undefined ? {} : { runMs: reply.ms }),
    };
  }

  /**
   * Fetches libnftables' cache for the next transaction now, off its critical path.
   *
   * libnftables (1.0.6) keeps a cache of the kernel's tables, chains and sets (without their
   * elements) and fetches it again before any transaction once the kernel's ruleset generation
   * has moved, which every commit does, ours included. Adding a rule, deleting a chain or
   * flushing a set needs it, so each such transaction began with a dump of every chain and set
   * of every table, anonymous sets included: 25–50 ms at 300 endpoints and 200 policies, most of
   * a one-rule change. This runs `table <family> <name> { }` for each table: it needs that same
   * cache, so libnftables fetches it, and asks nothing of the kernel (an existing table is left
   * as it is; the commit is empty and does not move the generation), so the cache stays current
   * until the next commit. Call it after a transaction, without awaiting it if nothing waits;
   * calls run in order, so a transaction queued behind it finds the cache fetched. A commit by
   * anyone else in between moves the generation and the next transaction fetches again, as
   * before, so this never makes a transaction act on a stale view.
   *
   * A table that does not exist is created empty: call it only for tables known to exist.
   */
  async warmCache(tables: readonly NftTableName[]): Promise<void> {
    if (tables.length === 0) return;
    const lines = tables.map((t) => {
      if (!/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(t.name)) {
        throw new NftablesError('invalid', `bad table name "${t.name}"`, this.#errorOpts());
      }
      return `table ${t.family} ${t.name} { }`;
    });
    await this.run(`${lines.join('\n')}\n`);
  }

  /**
   * The handle and comment of every rule of one chain, in order, from a netlink dump of that
   * chain alone. libnftables would list a chain only after fetching the elements of every set in
   * the namespace (to print anonymous sets), seconds for a large ruleset; this reads one chain's
   * rules and nothing else. Empty when the table or chain does not exist (the kernel's dump
   * then has nothing to say).
   */
  async ruleHandles(family: NftFamily, table: string, chain: string): Promise<NftRuleHandle[]> {
    if (family !== 'ip' && family !== 'ip6') {
      throw new NftablesError('invalid', `rule handles are read for ip and ip6 only, not ${family}`);
    }
    const reply = (await this.#send((id) => ({
      kind: 'rule-handles',
      id,
      family,
      table,
      chain,
    }))) as RuleHandlesReply;
    if (reply.error !== undefined) {
      throw new NftablesError(
        classifyErrno(reply.errno),
        `cannot read the rules of ${family} ${table} ${chain}: ${reply.error}`,
        {
          ...this.#errorOpts(),
        },
      );
    }
    return reply.rules.map(([handle, comment]) => ({ handle, comment: comment ?? undefined }));
  }

  async listRuleset(): Promise<NftRuleset> {
    const res = await this.run([{ list: { ruleset: null } }]);
    return parseRuleset(res.output);
  }

  async listTable(family: NftFamily, name: string): Promise<NftTableState> {
    const res = await this.run([{ list: { table: { family, name } } }]);
    const t = findTable(parseRuleset(res.output), family, name);
    if (!t) throw new NftablesError('not-found', `no table ${family} ${name}`, this.#errorOpts());
    return t;
  }

  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#worker.ref();
      this.#worker.postMessage({ kind: 'close' } satisfies WorkerRequest);
    }
    await this.#exited;
  }
}

/** The output's objects without metainfo; nothing when the output is not JSON (text commands). */
function outputItems(output: string): unknown[] {
  if (output.trim() === '') return [];
  try {
    return nftablesItems(output).filter(
      (i) => !(typeof i === 'object' && i !== null && 'metainfo' in (i as Record<string, unknown>)),
    );
  } catch {
    return [];
  }
}
