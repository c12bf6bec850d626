/**
 * The `calico` and `calico-ipam` executables (one file; the name it is run as picks the plugin).
 *
 * ADD, DEL, CHECK, STATUS and GC are handed to the node-local plugin service when one listens on
 * the config's `service_socket` (default /var/run/calico/cni-plugin.sock) in this network
 * namespace: it runs them warm and sends back what to print (service/). Otherwise, and for flags
 * and VERSION, the invocation runs here (direct.ts). This file imports only what the hand-over
 * needs; the plugin itself is loaded when it runs here.
 *
 * When `calico` delegates to `calico-ipam` and the `calico-ipam` in CNI_PATH is this very file (the
 * usual install: two names for one executable), the IPAM code runs in the same process with the
 * same environment and config it would get as a child, sharing the datastore connection. Any
 * other IPAM plugin (host-local, or a calico-ipam that is a different file) is executed as the
 * spec says.
 *
 * `calico --serve[=SOCKET]` runs the plugin service itself.
 */
import { realpathSync } from 'node:fs';
import { readStdinSync, writeStderr, writeStdout } from '@calico-ts/api/stdio';
import { messageOf } from './errors.js';
import { programFromPath } from './program.js';
import { callPluginService } from './service/client.js';
import { ownNetnsId, PROTOCOL_VERSION, SERVED_COMMANDS, serviceSocketFor } from './service/protocol.js';
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
const args = process.argv.slice(2);
const env: Record<string, string> = {};
for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;

if (/^--?serve(=|$)/.test(args[0] ?? '')) {
  const { serveFromCommandLine } = await import('./service/server.js');
  process.exit(await serveFromCommandLine(args, VERSION));
}

let stdin: string | undefined;
if (args.length === 0 && SERVED_COMMANDS.has(env.CNI_COMMAND ?? '')) {
  try {
    stdin = readStdinSync({ skipTerminal: true });
  } catch {
    // Left to the direct run, which reports it as the plugin always has.
  }
  const socket = stdin === undefined ? undefined : serviceSocketFor(stdin);
  if (stdin !== undefined && socket !== undefined) {
    const reply = await callPluginService(socket, {
      v: PROTOCOL_VERSION,
      program,
      env,
      stdin,
      ...(selfPath ? { self: selfPath } : {}),
      netns: ownNetnsId(),
      pid: process.pid,
    });
    if (reply) {
      writeStderr(reply.stderr);
      writeStdout(reply.stdout);
      process.exit(reply.exitCode);
    }
  }
}

const { runDirect } = await import('./direct.js');
process.exit(
  await runDirect({
    program,
    args,
    env,
    version: VERSION,
    selfPath,
    ...(stdin !== undefined ? { stdin } : {}),
  }),
);
