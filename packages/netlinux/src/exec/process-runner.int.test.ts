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
