import { chmod, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CniPluginError } from '../errors.js';
import { delegateError, ExecDelegateRunner } from './delegate.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cni-delegate-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A fake IPAM plugin: echoes what it was given as JSON, or fails as told. */
async function plugin(name: string, body: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, `#!/bin/sh\n${body}\n`);
  await chmod(file, 0o755);
  return file;
}

describe('ExecDelegateRunner', () => {
  it('runs the first plugin of that name in CNI_PATH with the same env (CNI_COMMAND set, IgnoreUnknown added) and stdin', async () => {
    await plugin(
      'echo-ipam',
      `stdin=$(cat); printf '{"cmd":"%s","args":"%s","cid":"%s","stdin":%s}' "$CNI_COMMAND" "$CNI_ARGS" "$CNI_CONTAINERID" "$stdin"`,
    );
    const r = new ExecDelegateRunner(
      { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c1', CNI_ARGS: 'K8S_POD_NAME=p' },
      ['/nonexistent', dir],
    );
    const out = JSON.parse(await r.run('echo-ipam', 'DEL', '{"name":"n"}'));
    expect(out).toEqual({
      cmd: 'DEL',
      args: 'IgnoreUnknown=1;K8S_POD_NAME=p',
      cid: 'c1',
      stdin: { name: 'n' },
    });
  });

  it('passes the delegate’s CNI error on with its code', async () => {
    await plugin(
      'bad-ipam',
      `echo '{"cniVersion":"1.0.0","code":11,"msg":"datastore unreachable","details":"dial tcp"}'; exit 1`,
    );
    const e = await new ExecDelegateRunner({}, [dir])
      .run('bad-ipam', 'ADD', '{}')
      .catch((x: CniPluginError) => x);
    expect(e).toBeInstanceOf(CniPluginError);
    expect(e).toMatchObject({
      code: 'delegate-failed',
      delegateCode: 11,
      message: 'bad-ipam: datastore unreachable',
      details: 'dial tcp',
    });
  });

  it('a delegate that fails without a CNI error is reported with its exit code and last stderr line', () => {
    const e = delegateError('x', 'ADD', 2, 'garbage', 'first\nsegfault\n');
    expect(e.message).toBe('x ADD failed (exit 2): segfault');
    expect(e.delegateCode).toBeUndefined();
  });

  it('names what is missing: CNI_PATH, or the plugin', async () => {
    await expect(new ExecDelegateRunner({}, []).run('calico-ipam', 'ADD', '{}')).rejects.toMatchObject({
      code: 'invalid-env',
    });
    await expect(new ExecDelegateRunner({}, [dir]).run('calico-ipam', 'ADD', '{}')).rejects.toThrow(
      'ipam.type: plugin "calico-ipam" not found in CNI_PATH',
    );
  });

  it('runs the plugin in-process only when CNI_PATH’s file is this very executable', async () => {
    const self = await plugin('self.mjs', 'echo exec');
    await symlink('self.mjs', join(dir, 'calico-ipam'));
    const calls: string[] = [];
    const r = new ExecDelegateRunner({}, [dir], {
      self: {
        realpath: await realpath(self),
        run: async (cmd) => {
          calls.push(cmd);
          return 'in-process\n';
        },
      },
    });
    expect(await r.run('calico-ipam', 'ADD', '{}')).toBe('in-process\n');
    expect(calls).toEqual(['ADD']);
    const other = new ExecDelegateRunner({}, [dir], {
      self: { realpath: '/somewhere/else/calico.mjs', run: async () => 'in-process\n' },
    });
    expect(await other.run('calico-ipam', 'ADD', '{}')).toBe('exec\n');
  });
});
