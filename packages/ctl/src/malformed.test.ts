import { describe, expect, test } from 'vitest';
import { harness } from './testing-internal/harness.js';
import { MALFORMED } from './testing-internal/malformed.js';

describe('malformed documents are refused, naming the field; nothing is written', () => {
  test('there are at least 30 cases', () => expect(MALFORMED.length).toBeGreaterThanOrEqual(30));
  test.each(MALFORMED)('$what', async ({ doc, names }) => {
    const h = harness();
    for (const cmd of ['apply', 'create']) {
      const r = await h.run(`${cmd} -f -`, { stdin: doc });
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(names);
      expect(r.stderr.startsWith('Failed to execute command: ')).toBe(true);
    }
    expect(await h.dump()).toEqual({});
  });
});
