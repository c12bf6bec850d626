import { describe, expect, it } from 'vitest';
import { runAsync } from './processes.js';

describe('runAsync', () => {
  it('reports the exit status of a program that exits without reading its input, every time', async () => {
    // Before: an EPIPE on the child's stdin was an unhandled stream error that ended the lab
    // (now and then, depending on timing); 200 tries made it happen here reliably.
    for (let i = 0; i < 200; i++) {
      const r = await runAsync(['/bin/false'], { input: i % 2 === 0 ? '' : 'x'.repeat(100_000) });
      expect(r.status).toBe(1);
    }
  });

  it('passes input, collects output and names a program that cannot start', async () => {
    expect(await runAsync(['sh', '-c', 'read x; echo "got $x"; echo err >&2'], { input: 'hi\n' })).toEqual({
      status: 0,
      stdout: 'got hi\n',
      stderr: 'err\n',
    });
    const missing = await runAsync(['/nonexistent/program']);
    expect(missing.status).toBe(127);
    expect(missing.stderr).toMatch(/nonexistent/);
  });
});
