/**
 * One run of the command line, as a command's `run` sees it: the logger and the global flags
 * (`-l`, `--context`, `--allow-version-mismatch`), and the way to the datastore.
 *
 *   withDatastore(flags, fn): connect (config file/env → Datastore) ──► cluster version check ──►
 *                             fn(datastore, connection) ──► exit code; the connection is closed
 *
 * A read-only command runs beside the version check instead of after it: what it writes is held
 * until the check has passed, and a mismatch prints only itself.
 */
import type { Datastore } from '@calico-ts/datastore';
import type { CommandContext } from '../commands/context.js';
import type { IpamDeps } from '../commands/ipam.js';
import { CtlError } from '../errors.js';
import type { CommandIO } from '../io.js';
import { createLogger, type Logger } from '../log.js';
import { CLIENT_VERSION } from '../version.js';
import type { CliDeps, Connection, ConnectOptions } from './deps.js';

/** The flags every datastore command takes (`connectionOptions` in shared.ts). */
export interface ConnectionFlags {
  config: string;
  allowVersionMismatch?: boolean;
  namespace?: string;
  context?: string;
}

export interface DatastoreRun {
  /** Skip the cluster version check (`datastore migrate import`). */
  check?: boolean;
  /** Reads only: run beside the version check, output held until it passes. */
  readOnly?: boolean;
}

export class CliSession {
  log: Logger;
  readonly sleep: (ms: number) => Promise<void>;
  #allowMismatch = false;
  #context: string | undefined;
  /** The streams commands write to: `deps.io`, or a holding copy while a read runs beside the check. */
  #commandIO: CommandIO;

  /** `argv` as the command line gave it (after old spellings are rewritten), for usage errors. */
  constructor(
    readonly deps: CliDeps,
    readonly argv: readonly string[],
  ) {
    this.log = createLogger('panic', deps.io.stderr, deps.now);
    this.#commandIO = deps.io;
    this.sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  }

  /** The global flags, once parsed. */
  setGlobals(log: Logger, allowVersionMismatch: boolean, context: string | undefined): void {
    this.log = log;
    this.#allowMismatch = allowVersionMismatch;
    this.#context = context;
  }

  ctx(): CommandContext {
    return { io: this.#commandIO, log: this.log, newClusterGUID: this.deps.newClusterGUID };
  }

  usageError(): CtlError {
    return new CtlError(
      'usage',
      `Invalid option: 'calicoctl ${this.argv.join(' ')}'. Use flag '--help' to read about a specific subcommand.`,
    );
  }

  /** `get` and `delete` name their resources either by KIND [NAME…] or by `-f`, never both or neither. */
  requireKindOrFile(kind: string | undefined, filename: string | undefined): void {
    if ((kind === undefined) === (filename === undefined)) throw this.usageError();
  }

  connect(flags: ConnectionFlags): Promise<Connection> {
    const context = flags.context ?? this.#context;
    const options: ConnectOptions = context ? { context } : {};
    return this.deps.connect(flags.config, this.log, options);
  }

  /** `fn` with a datastore connection, after the cluster version check (unless `check: false`). */
  async withDatastore(
    flags: ConnectionFlags,
    fn: (ds: Datastore, conn: Connection) => Promise<number>,
    { check = true, readOnly = false }: DatastoreRun = {},
  ): Promise<number> {
    const conn = await this.connect(flags);
    try {
      if (check && !flags.allowVersionMismatch && !this.#allowMismatch) {
        const { checkVersionMismatch } = await import('../cluster.js');
        const checked = checkVersionMismatch(conn.datastore, CLIENT_VERSION);
        if (readOnly) return await this.#besideCheck(checked, () => fn(conn.datastore, conn));
        await checked;
      }
      return await fn(conn.datastore, conn);
    } finally {
      await conn.close().catch(() => {});
    }
  }

  /** `fn` with the IPAM client and records over the connection's keys. */
  withIpam(flags: ConnectionFlags, fn: (deps: IpamDeps) => Promise<number>): Promise<number> {
    return this.withDatastore(flags, async (ds, conn) => fn(await this.ipamOf(ds, conn)));
  }

  async ipamOf(ds: Datastore, conn: Connection): Promise<IpamDeps> {
    if (!conn.kv) throw new CtlError('unsupported', 'IPAM is not available on this datastore');
    const { IpamClient, IpamStore } = await import('@calico-ts/ipam');
    const store = new IpamStore(conn.kv);
    return { datastore: ds, store, ipam: new IpamClient(ds, store) };
  }

  async #besideCheck(checked: Promise<void>, run: () => Promise<number>): Promise<number> {
    const { io } = this.deps;
    const held: { to: 'stdout' | 'stderr'; text: string }[] = [];
    this.#commandIO = {
      ...io,
      stdout: (text) => held.push({ to: 'stdout', text }),
      stderr: (text) => held.push({ to: 'stderr', text }),
    };
    const [check, ran] = await Promise.allSettled([checked, run()]).finally(() => {
      this.#commandIO = io;
    });
    if (check.status === 'rejected') throw check.reason;
    for (const h of held) io[h.to](h.text);
    if (ran.status === 'rejected') throw ran.reason;
    return ran.value;
  }
}
