import { describe, expect, test } from 'vitest';
import { harness } from '../testing-internal/harness.js';
import type { CtlCommand } from './command.js';
import { COMMAND_TABLE } from './table.js';

/** Every command path of the table (`ipam show`, `datastore migrate export`, …). */
function leaves(commands: readonly CtlCommand[], prefix: string[] = []): string[][] {
  return commands.flatMap((c) =>
    'subcommands' in c ? leaves(c.subcommands, [...prefix, c.name]) : [[...prefix, c.name]],
  );
}

describe('the command table', () => {
  test('names are unique at each level', () => {
    const check = (commands: readonly CtlCommand[]) => {
      const names = commands.map((c) => c.name);
      expect(new Set(names).size).toBe(names.length);
      for (const c of commands) if ('subcommands' in c) check(c.subcommands);
    };
    check(COMMAND_TABLE);
  });

  test('--help lists the table, in its order, each with its description', async () => {
    const help = (await harness().run('--help')).stdout;
    const listed = [...help.split('Commands:\n')[1]!.matchAll(/^ {2}(\S+)/gm)].map((m) => m[1]);
    expect(listed).toEqual(COMMAND_TABLE.map((c) => c.name));
    for (const c of COMMAND_TABLE) expect(help.replace(/\s+/g, ' ')).toContain(c.usage.description);
  });

  test("every command's help is its usage, and exits 0", async () => {
    const h = harness();
    for (const path of leaves(COMMAND_TABLE)) {
      const r = await h.run([...path, '--help']);
      expect(r.code, path.join(' ')).toBe(0);
      expect(r.stdout, path.join(' ')).toMatch(new RegExp(`^Usage: calicoctl ${path.join(' ')} `));
    }
  });
});
