import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isNetlinuxError } from '../errors.js';
import { ProcessCommandRunner } from './process-runner.js';

// Runs real (unprivileged) programs: no namespace, nothing changed on the machine.
describe('ProcessCommandRunner', () => {
  const runner = new ProcessCommandRunner();

  it('returns exit code, stdout and stderr, feeding stdin', async () => {
    expect(await runner.run('cat', [], { input: 'hello' })).toEqual({
      exitCode: 0,
      stdout: 'hello',
      stderr: '',
    });
    const r = await runner.run('cat', ['/nonexistent/file']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toBe('cat: /nonexistent/file: No such file or directory\n');
  });

  it('runs tools with LC_ALL=C so error texts can be classified', async () => {
    const r = await runner.run('printenv', ['LC_ALL']);
    expect(r.stdout).toBe('C\n');
  });

  it('passes arguments without a shell', async () => {
    const r = await runner.run('printf', ['%s|', '$(echo no)', 'a b', ';']);
    expect(r.stdout).toBe('$(echo no)|a b|;|');
  });

  it('fails with code failed when the program does not exist', async () => {
    let err: unknown;
    try {
      await runner.run('no-such-program-netlinux', []);
    } catch (e) {
      err = e;
    }
    expect(isNetlinuxError(err, 'failed')).toBe(true);
    expect((err as Error).message).toContain('cannot run no-such-program-netlinux');
  });

  it('kills a command that outlives its time limit', async () => {
    const quick = new ProcessCommandRunner({ timeoutMs: 200 });
    const started = Date.now();
    const r = await quick.run('sleep', ['5']);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(r.exitCode).toBe(-1);
    expect(r.stderr).toContain('killed by SIGKILL');
  });
});

/** The bun executable the workspace installs for the native builds (a dependency of the CNI plugin). */
function bunBinary(): string {
  const fromPlugin = createRequire(
    fileURLToPath(new URL('../../../cni-plugin/package.json', import.meta.url)),
  );
  const fromBun = createRequire(fromPlugin.resolve('bun/package.json'));
  const arch = process.arch === 'arm64' ? 'aarch64' : process.arch;
  return fromBun.resolve(`@oven/bun-${process.platform}-${arch}/bin/bun`);
}

// The native executables run this runner under Bun, where it uses Bun.spawn: same results.
describe('ProcessCommandRunner under Bun', () => {
  it('returns exit code, stdout and stderr, feeds stdin, enforces the time limit, names a missing program', () => {
    const script = `
      import { ProcessCommandRunner } from ${JSON.stringify(fileURLToPath(new URL('./process-runner.ts', import.meta.url)))};
      const r = new ProcessCommandRunner({ timeoutMs: 300 });
      const out = [];
      out.push(await r.run('sh', ['-c', 'read x; echo out:$x; printenv LC_ALL >&2; exit 3'], { input: 'hello\\n' }));
      out.push(await r.run('sleep', ['5']));
      try { await r.run('/nonexistent/program', []); out.push('no error'); }
      catch (e) { out.push({ code: e.code, message: e.message }); }
      process.stdout.write(JSON.stringify(out));
    `;
    const r = spawnSync(bunBinary(), ['-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(r.stderr).toBe('');
    const [ran, timedOut, missing] = JSON.parse(r.stdout) as [
      { exitCode: number; stdout: string; stderr: string },
      { exitCode: number; stderr: string },
      { code: string; message: string },
    ];
    expect(ran).toEqual({ exitCode: 3, stdout: 'out:hello\n', stderr: 'C\n' });
    expect(timedOut.exitCode).toBe(-1);
    expect(timedOut.stderr).toBe('killed by SIGKILL (time limit 300 ms)');
    expect(missing.code).toBe('failed');
    expect(missing.message).toMatch(/^cannot run \/nonexistent\/program: .*ENOENT/);
  });
});
