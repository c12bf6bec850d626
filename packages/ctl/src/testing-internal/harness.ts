/**
 * Test harness: the real command line over an in-memory datastore (MemoryKVStore under
 * KVDatastore) with a fixed clock and UIDs, and in-memory I/O, so a test reads exactly what a
 * user would see: stdout, stderr and the exit code.
 */
import { KVDatastore, MemoryKVStore } from '@calico-ts/datastore';
import { runCli } from '../cli.js';
import { memoryIO } from '../io.js';

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Harness {
  store: MemoryKVStore;
  datastore: KVDatastore;
  /** Files the commands can read (`-f`). */
  files: Record<string, string>;
  /** Run `calicoctl <args>` with optional stdin and environment. */
  run(args: string[] | string, opts?: { stdin?: string; env?: Record<string, string> }): Promise<Run>;
  /** Every key and value in the store, sorted by key. */
  dump(): Promise<Record<string, string>>;
}

/**
 * `backend: 'kubernetes'` labels the in-memory datastore as the Kubernetes one, for what calicoctl
 * decides from the backend alone (refusals, the migration target); the store stays in memory.
 */
export function harness(opts: { backend?: 'memory' | 'kubernetes' } = {}): Harness {
  const store = new MemoryKVStore();
  let uid = 0;
  const datastore = new KVDatastore(store, {
    backend: opts.backend ?? 'memory',
    now: () => new Date('2025-01-02T03:04:05Z'),
    newUid: () => `00000000-0000-4000-8000-${String(++uid).padStart(12, '0')}`,
  });
  const files: Record<string, string> = {};
  return {
    store,
    datastore,
    files,
    async run(args, opts = {}) {
      const argv = typeof args === 'string' ? splitArgs(args) : args;
      const io = memoryIO({ stdin: opts.stdin, env: opts.env, files });
      const code = await runCli(argv, {
        io,
        now: () => 0,
        newClusterGUID: () => '0123456789abcdef0123456789abcdef',
        connect: async () => ({ datastore, kv: store, close: async () => {} }),
        sleep: async () => {},
      });
      return { code, stdout: io.stdoutText, stderr: io.stderrText };
    },
    async dump() {
      const list = await store.list('/');
      return Object.fromEntries(list.kvs.map((kv) => [kv.key, kv.value]));
    },
  };
}

/** Split a command line on spaces, honouring single quotes. */
function splitArgs(s: string): string[] {
  const out: string[] = [];
  const re = /'([^']*)'|(\S+)/g;
  for (const m of s.matchAll(re)) out.push(m[1] ?? m[2]!);
  return out;
}
