/**
 * The `calico` and `calico-ipam` executables (one file; the name it is run as picks the plugin).
 *
 * Reads flags, environment and stdin, runs one handler, prints a result or a CNI error object on
 * stdout and exits. Logs go to stderr. No stack trace ever reaches the user. The datastore client
 * (etcd3, gRPC) is imported only by commands that use it, so `-v` and VERSION start fast.
 *
 * When `calico` delegates to `calico-ipam` and the `calico-ipam` in CNI_PATH is this very file (the
 * usual install: two names for one executable), the IPAM code runs in this process with the same
 * environment and config it would get as a child, sharing the datastore connection: one Node
 * start-up and one etcd handshake fewer per ADD and DEL. Any other IPAM plugin (host-local, or a
 * calico-ipam that is a different file) is executed as the spec says.
 */
import { realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { readStdinSync, writeStderr, writeStdout } from '@calico-ts/api/stdio';
import { Netlinux } from '@calico-ts/netlinux';
import { messageOf } from './errors.js';
import { borrowBackend, type PluginBackend } from './io/backend.js';
import { type DelegateHandler, delegateError, ExecDelegateRunner } from './io/delegate.js';
import { FileLock } from './io/host-lock.js';
import { LinuxDataplane } from './io/linux-dataplane.js';
import { createLogger } from './io/logger.js';
import { type PluginEffects, programFromPath, runPlugin } from './plugin.js';
import type { Env } from './spec/env.js';
import { formatJson, toCniErrorObject } from './spec/error.js';

declare const __CALICO_TS_VERSION__: string | undefined;
const VERSION = typeof __CALICO_TS_VERSION__ === 'string' ? __CALICO_TS_VERSION__ : 'v0.1.0-dev';

function fail(e: unknown): never {
  writeStdout(formatJson(toCniErrorObject(e)));
  writeStderr(`fatal: ${messageOf(e)}\n`);
  process.exit(1);
}
process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);
// etcd3 names the server by IP for TLS, which Node reports as deprecated on every connection; the
// plugin's stderr is its log, so keep that out of it.
process.noDeprecation = true;

/** Standard streams by descriptor: Node's stream objects would cost the native build ~12 ms. */
async function readAllStdin(): Promise<string> {
  return readStdinSync({ skipTerminal: true });
}

function realpathOrUndefined(p: string | undefined): string | undefined {
  try {
    return p ? realpathSync(p) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Run by Node, argv[1] is the script, under whatever name it was run as. Run as a native executable
 * (bun build --compile), argv[1] is a path inside the executable: the name it was run as is argv0
 * and the file is execPath.
 */
const nativeExecutable = process.argv[1]?.startsWith('/$bunfs/') === true;
const program = programFromPath(nativeExecutable ? process.argv0 : process.argv[1]);
const selfPath = realpathOrUndefined(nativeExecutable ? process.execPath : process.argv[1]);
/** The first datastore client this process opened; an in-process calico-ipam borrows it. */
let opened: PluginBackend | undefined;

const effects: PluginEffects = {
  log: createLogger(program),
  host: {
    async readFile(path) {
      try {
        return await readFile(path, 'utf8');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw e;
      }
    },
    hostname: () => hostname(),
    now: () => new Date(),
  },
  readStdin: readAllStdin,
  delegate: (inv, env) =>
    new ExecDelegateRunner(
      env,
      inv.path,
      selfPath ? { self: { realpath: selfPath, run: ipamInProcess(env) } } : {},
    ),
  openBackend: async (conf, env, log) => {
    const t0 = performance.now();
    const { openCalicoBackend } = await import('./io/calico-backend.js');
    const t1 = performance.now();
    const backend = await openCalicoBackend(conf, env, log);
    opened ??= backend;
    log.debug('opened the datastore', {
      loadMs: Math.round(t1 - t0),
      connectMs: Math.round(performance.now() - t1),
      sinceStartMs: Math.round(performance.now()),
    });
    return backend;
  },
  dataplane: (log) => new LinuxDataplane(new Netlinux(), { log: (m) => log.info(m) }),
  lock: new FileLock({ log: (m) => effects.log.warn(m) }),
};

/** calico-ipam as this process runs it for its own ADD/DEL: what a child would get, in and out. */
function ipamInProcess(env: Env): DelegateHandler {
  return async (command, stdin) => {
    const ipamEnv: Env = {
      ...env,
      CNI_COMMAND: command,
      CNI_ARGS: env.CNI_ARGS ? `IgnoreUnknown=1;${env.CNI_ARGS}` : 'IgnoreUnknown=1',
    };
    const inner: PluginEffects = {
      ...effects,
      log: createLogger('calico-ipam'),
      readStdin: async () => stdin,
      openBackend: async (conf, e, log) => borrowBackend(opened ?? (await effects.openBackend(conf, e, log))),
    };
    const out = await runPlugin('calico-ipam', [], ipamEnv, inner, VERSION);
    if (out.exitCode !== 0) throw delegateError('calico-ipam', command, out.exitCode, out.stdout, '');
    return out.stdout;
  };
}

const out = await runPlugin(program, process.argv.slice(2), process.env, effects, VERSION);
writeStdout(out.stdout);
process.exit(out.exitCode);
