/**
 * `node diags`: a bundle of this host's network state and the Calico logs, for support. Needs root
 * (the nftables ruleset, sockets' processes). Each command runs with a deadline; one that is
 * missing or fails is recorded in its file, never ends the collection. The bundle is a .tar.gz in a
 * new directory under the temp dir, as upstream's.
 */
import { spawn } from 'node:child_process';
import { lstat, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import { CtlError } from '../errors.js';
import { bundleName, type CommandOutcome, DIAG_COMMANDS, outcomeText } from '../node/diags.js';
import { type TarEntry, tarArchive } from '../node/tar.js';
import type { CommandContext } from './context.js';

const COMMAND_TIMEOUT_MS = 15_000;
/** A log file larger than this is listed in `diagnostics/logs-skipped`, not copied. */
const MAX_LOG_BYTES = 256 * 1024 * 1024;

/** Runs `argv` with a deadline, collecting its output; never rejects. */
export function runCommand(argv: readonly string[]): Promise<CommandOutcome> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, COMMAND_TIMEOUT_MS);
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ code: null, stdout, stderr, error: e.code === 'ENOENT' ? 'not installed' : e.message });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve(
        timedOut
          ? { code: null, stdout, stderr, error: `no answer in ${COMMAND_TIMEOUT_MS / 1000} s` }
          : { code, stdout, stderr },
      );
    });
  });
}

/** Regular files below `dir`, recursively (symbolic links are not followed). */
async function filesBelow(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const d of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, d.name);
    if (d.isDirectory()) out.push(...(await filesBelow(p)));
    else if (d.isFile()) out.push(p);
  }
  return out.sort();
}

export async function nodeDiagsCommand(
  args: { logDir: string },
  host: { isRoot(): boolean },
  ctx: CommandContext,
): Promise<number> {
  if (!host.isRoot())
    throw new CtlError('unsupported', 'Need super user privileges: Operation not permitted');
  const now = new Date();
  const mtime = Math.floor(now.getTime() / 1000);
  const entries: TarEntry[] = [];
  const add = (name: string, data: string | Buffer) =>
    entries.push({ name, data: typeof data === 'string' ? Buffer.from(data) : data, mtime });

  ctx.io.stdout('Collecting diagnostics\n');
  for (const c of DIAG_COMMANDS) {
    ctx.io.stdout(`Dumping ${c.title}\n`);
    add(`diagnostics/${c.file}`, outcomeText(c, await runCommand(c.argv)));
  }

  ctx.io.stdout(`Copying Calico logs from ${args.logDir}\n`);
  let logs: string[] = [];
  try {
    logs = await filesBelow(args.logDir);
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such directory' : (e as Error).message;
    ctx.io.stdout(`No Calico logs copied: ${args.logDir}: ${why}\n`);
    add('diagnostics/logs-skipped', `${args.logDir}: ${why}\n`);
  }
  const skipped: string[] = [];
  for (const f of logs) {
    const st = await lstat(f);
    if (st.size > MAX_LOG_BYTES) {
      skipped.push(`${f}: ${st.size} bytes, over ${MAX_LOG_BYTES}`);
      continue;
    }
    entries.push({
      name: `logs/${relative(args.logDir, f)}`,
      data: await readFile(f),
      mtime: Math.floor(st.mtimeMs / 1000),
    });
  }
  if (skipped.length > 0) add('diagnostics/logs-skipped', `${skipped.join('\n')}\n`);

  const dir = await mkdtemp(join(tmpdir(), 'calico-diags'));
  const file = join(dir, bundleName(now));
  await writeFile(file, gzipSync(tarArchive(entries)), { mode: 0o600 });
  ctx.io.stdout(`\nDiags saved to ${file}\n`);
  return 0;
}
