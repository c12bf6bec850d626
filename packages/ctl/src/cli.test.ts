import { describe, expect, test } from 'vitest';
import { COMMAND_FLAGS } from './commands/completion.js';
import { harness } from './testing-internal/harness.js';

describe('command line', () => {
  test('no arguments: usage on stderr, exit 1', async () => {
    const r = await harness().run([]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^Usage: calicoctl \[options\] <command> \[<args>\.\.\.\]/);
  });

  test('--help exits 0 and lists every command', async () => {
    const r = await harness().run('--help');
    expect(r.code).toBe(0);
    for (const c of [
      'create',
      'replace',
      'apply',
      'patch',
      'delete',
      'get',
      'label',
      'validate',
      'version',
      'datastore',
      'completion',
    ]) {
      expect(r.stdout).toContain(`  ${c} `);
    }
  });

  test('subcommand help lists the resource types', async () => {
    const r = await harness().run('get --help');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('-o, --output <OUTPUT>');
    expect(r.stdout).toContain('    * ipPool\n');
    expect(r.stdout).toContain('    * bgpConfiguration\n');
  });

  test("unknown options get upstream's message", async () => {
    expect(await harness().run('get ippool --bogus')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "Invalid option: 'calicoctl get ippool --bogus'. Use flag '--help' to read about a specific subcommand.\n",
    });
    expect((await harness().run('apply')).stderr).toBe(
      "Invalid option: 'calicoctl apply'. Use flag '--help' to read about a specific subcommand.\n",
    );
  });

  test('an unknown command', async () => {
    const r = await harness().run('frobnicate');
    expect(r.code).toBe(1);
    expect(r.stderr.startsWith('unknown command: "frobnicate"\n')).toBe(true);
  });

  test('log levels: unknown is refused; info logs on stderr', async () => {
    expect(await harness().run('-l loud get ippools')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Unknown log level: loud, expected one of: \npanic, fatal, error, warn, info, debug.\n',
    });
    const r = await harness().run('--log-level=info validate -f -', {
      stdin: 'apiVersion: projectcalico.org/v3\nkind: Tier\nmetadata: {name: t}\nspec: {order: 5}\n',
    });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('INFO[0000] Log level set to info\nINFO[0000] Loaded 1 resource(s) from -\n');
  });

  test('--version points at the version command', async () => {
    expect(await harness().run('--version')).toEqual({
      code: 0,
      stdout: "Run 'calicoctl version' to see version information.\n",
      stderr: '',
    });
  });

  test('node run is not available yet, and says so', async () => {
    expect(await harness().run('node run')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'calicoctl node run is not available in this build yet\n',
    });
  });
});

describe('completion', () => {
  test('bash: a completion function naming every command, flag and kind', async () => {
    const r = await harness().run('completion bash');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('complete -o default -F _calicoctl calicoctl');
    expect(r.stdout).toContain('ippools');
    expect(r.stdout).toContain('get) flags="-f --filename');
  });
  test('zsh', async () => {
    const r = await harness().run('completion zsh');
    expect(r.stdout.startsWith('#compdef calicoctl\n')).toBe(true);
  });
  test('other shells are refused', async () => {
    expect(await harness().run('completion fish')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'unsupported shell "fish": use bash or zsh\n',
    });
  });
  test('the completion flag table matches what each command accepts', async () => {
    const h = harness();
    for (const [cmd, flags] of Object.entries(COMMAND_FLAGS)) {
      if (['datastore', 'completion', 'ipam', 'node'].includes(cmd)) continue;
      const help = (await h.run([cmd, '--help'])).stdout;
      for (const f of flags) expect(help, `${cmd} ${f}`).toMatch(new RegExp(`(^|[ ,])${f}[ ,=<]`, 'm'));
    }
  });
});
