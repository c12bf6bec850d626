/**
 * The built executables (bin/calico, bin/calico-ipam) against malformed input: every case must
 * print exactly one CNI error object on stdout, exit non-zero, and never show a stack trace.
 * The bundle is built first, as `pnpm build` builds it.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPlugins, pluginDir, removePlugins } from './plugin-executable.js';

const bin = pluginDir;

beforeAll(async () => {
  await buildPlugins();
}, 60_000);

afterAll(removePlugins);

const base = {
  CNI_CONTAINERID: 'abc123',
  CNI_NETNS: '/run/netns/cnitest-none',
  CNI_IFNAME: 'eth0',
  CNI_PATH: bin,
};
const good = { cniVersion: '1.0.0', name: 'net1', type: 'calico', ipam: { type: 'calico-ipam' } };
const conf = (over: Record<string, unknown>) => JSON.stringify({ ...good, ...over });

interface Case {
  name: string;
  env: Record<string, string | undefined>;
  stdin: string;
  code: number;
  msg: string;
  program?: 'calico' | 'calico-ipam';
  args?: string[];
}

const cases: Case[] = [
  // Environment (code 4)
  {
    name: 'no CNI_COMMAND',
    env: { ...base },
    stdin: conf({}),
    code: 4,
    msg: 'required env variables [CNI_COMMAND] missing',
  },
  {
    name: 'unknown CNI_COMMAND',
    env: { ...base, CNI_COMMAND: 'ATTACH' },
    stdin: conf({}),
    code: 4,
    msg: 'unknown CNI_COMMAND: ATTACH',
  },
  {
    name: 'ADD without CNI_CONTAINERID',
    env: { ...base, CNI_COMMAND: 'ADD', CNI_CONTAINERID: undefined },
    stdin: conf({}),
    code: 4,
    msg: '[CNI_CONTAINERID]',
  },
  {
    name: 'ADD without CNI_NETNS',
    env: { ...base, CNI_COMMAND: 'ADD', CNI_NETNS: undefined },
    stdin: conf({}),
    code: 4,
    msg: '[CNI_NETNS]',
  },
  {
    name: 'ADD without CNI_IFNAME',
    env: { ...base, CNI_COMMAND: 'ADD', CNI_IFNAME: undefined },
    stdin: conf({}),
    code: 4,
    msg: '[CNI_IFNAME]',
  },
  {
    name: 'DEL without anything',
    env: { CNI_COMMAND: 'DEL' },
    stdin: conf({}),
    code: 4,
    msg: '[CNI_CONTAINERID,CNI_IFNAME]',
  },
  {
    name: 'CHECK without CNI_PATH',
    env: { ...base, CNI_COMMAND: 'CHECK', CNI_PATH: undefined },
    stdin: conf({}),
    code: 4,
    msg: '[CNI_PATH]',
  },
  {
    name: 'GC without CNI_PATH',
    env: { CNI_COMMAND: 'GC' },
    stdin: conf({ cniVersion: '1.1.0' }),
    code: 4,
    msg: '[CNI_PATH]',
  },
  {
    name: 'container ID with a slash',
    env: { ...base, CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'a/b' },
    stdin: conf({}),
    code: 4,
    msg: 'CNI_CONTAINERID: invalid characters',
  },
  {
    name: 'container ID starting with a dot',
    env: { ...base, CNI_COMMAND: 'DEL', CNI_CONTAINERID: '.abc' },
    stdin: conf({}),
    code: 4,
    msg: 'CNI_CONTAINERID',
  },
  {
    name: 'interface name too long',
    env: { ...base, CNI_COMMAND: 'ADD', CNI_IFNAME: 'eth0123456789012' },
    stdin: conf({}),
    code: 4,
    msg: 'is too long',
  },
  {
    name: 'interface name with a space',
    env: { ...base, CNI_COMMAND: 'ADD', CNI_IFNAME: 'eth 0' },
    stdin: conf({}),
    code: 4,
    msg: 'whitespace',
  },
  {
    name: 'CNI_ARGS pair without =',
    env: { ...base, CNI_COMMAND: 'ADD', CNI_ARGS: 'K8S_POD_NAME' },
    stdin: conf({}),
    code: 4,
    msg: 'CNI_ARGS: invalid pair',
  },
  {
    name: 'CNI_ARGS IP not an address',
    env: { ...base, CNI_COMMAND: 'ADD', CNI_ARGS: 'IP=198.19.0.256' },
    stdin: conf({}),
    code: 4,
    msg: 'IP=198.19.0.256',
  },
  // Decoding (code 6)
  {
    name: 'empty stdin',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: '',
    code: 6,
    msg: 'no network config on stdin',
  },
  {
    name: 'not JSON',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: 'name: net1',
    code: 6,
    msg: 'not valid JSON',
  },
  {
    name: 'truncated JSON',
    env: { ...base, CNI_COMMAND: 'DEL' },
    stdin: '{"name": "net1",',
    code: 6,
    msg: 'not valid JSON',
  },
  {
    name: 'JSON list',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: '[{"name":"net1"}]',
    code: 6,
    msg: 'must be a JSON object, not a list',
  },
  {
    name: 'JSON string',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: '"net1"',
    code: 6,
    msg: 'must be a JSON object',
  },
  // Versions (code 1)
  {
    name: 'cniVersion 0.5.0',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ cniVersion: '0.5.0' }),
    code: 1,
    msg: 'incompatible CNI versions: config is "0.5.0"',
  },
  {
    name: 'cniVersion 2.0.0',
    env: { ...base, CNI_COMMAND: 'DEL' },
    stdin: conf({ cniVersion: '2.0.0' }),
    code: 1,
    msg: 'incompatible CNI versions',
  },
  {
    name: 'CHECK in 0.3.1',
    env: { ...base, CNI_COMMAND: 'CHECK' },
    stdin: conf({ cniVersion: '0.3.1' }),
    code: 1,
    msg: 'does not allow CHECK',
  },
  {
    name: 'GC in 1.0.0',
    env: { ...base, CNI_COMMAND: 'GC' },
    stdin: conf({ cniVersion: '1.0.0' }),
    code: 1,
    msg: 'does not allow GC',
  },
  {
    name: 'STATUS in 0.4.0',
    env: { CNI_COMMAND: 'STATUS' },
    stdin: conf({ cniVersion: '0.4.0' }),
    code: 1,
    msg: 'does not allow STATUS',
  },
  // Config (code 7)
  {
    name: 'cniVersion a number',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ cniVersion: 1 }),
    code: 7,
    msg: 'cniVersion must be a string',
  },
  {
    name: 'no name',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ name: undefined }),
    code: 7,
    msg: 'name: missing',
  },
  {
    name: 'name with a slash',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ name: 'a/b' }),
    code: 7,
    msg: 'name: "a/b" has invalid characters',
  },
  {
    name: 'name a number',
    env: { ...base, CNI_COMMAND: 'DEL' },
    stdin: conf({ name: 3 }),
    code: 7,
    msg: 'name: must be a string',
  },
  {
    name: 'no ipam',
    env: { ...base, CNI_COMMAND: 'DEL' },
    stdin: conf({ ipam: undefined }),
    code: 7,
    msg: 'ipam: missing',
  },
  {
    name: 'ipam without type',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ ipam: { assign_ipv4: 'true' } }),
    code: 7,
    msg: 'ipam.type: missing',
  },
  {
    name: 'ipam.type a path',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ ipam: { type: '/bin/sh' } }),
    code: 7,
    msg: 'ipam.type: must be a plugin name',
  },
  {
    name: 'assign_ipv4 "yes"',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ ipam: { type: 'calico-ipam', assign_ipv4: 'yes' } }),
    code: 7,
    msg: 'ipam.assign_ipv4',
  },
  {
    name: 'ipv4_pools a string',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ ipam: { type: 'calico-ipam', ipv4_pools: '198.19.0.0/16' } }),
    code: 7,
    msg: 'ipam.ipv4_pools: must be a list',
  },
  {
    name: 'mtu a string',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ mtu: '1500' }),
    code: 7,
    msg: 'mtu: must be a non-negative integer',
  },
  {
    name: 'mtu too small',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ mtu: 10 }),
    code: 7,
    msg: 'mtu: must be 0 (automatic) or between 68 and 65535',
  },
  {
    name: 'datastore_type etcdv2',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ datastore_type: 'etcdv2' }),
    code: 7,
    msg: 'datastore_type',
  },
  {
    name: 'etcd_endpoints a list',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ etcd_endpoints: ['http://127.0.0.1:2379'] }),
    code: 7,
    msg: 'etcd_endpoints: must be a string',
  },
  {
    name: 'policy a string',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ policy: 'k8s' }),
    code: 7,
    msg: 'policy: must be an object',
  },
  {
    name: 'kubernetes.kubeconfig a number',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ kubernetes: { kubeconfig: 1 } }),
    code: 7,
    msg: 'kubernetes.kubeconfig',
  },
  {
    name: 'log_level a number',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ log_level: 5 }),
    code: 7,
    msg: 'log_level: must be a string',
  },
  {
    name: 'nodename_file_optional a string',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ nodename_file_optional: 'yes' }),
    code: 7,
    msg: 'nodename_file_optional',
  },
  {
    name: 'prevResult with a bad address',
    env: { ...base, CNI_COMMAND: 'DEL' },
    stdin: conf({ prevResult: { ips: [{ address: '1.2.3.4' }] } }),
    code: 7,
    msg: 'prevResult.ips[0].address',
  },
  {
    name: 'CHECK without prevResult',
    env: { ...base, CNI_COMMAND: 'CHECK' },
    stdin: conf({}),
    code: 7,
    msg: 'prevResult: missing',
  },
  {
    name: 'GC without valid-attachments',
    env: { CNI_COMMAND: 'GC', CNI_PATH: bin },
    stdin: conf({ cniVersion: '1.1.0' }),
    code: 7,
    msg: 'cni.dev/valid-attachments: missing',
  },
  {
    name: 'GC with a bad attachment',
    env: { CNI_COMMAND: 'GC', CNI_PATH: bin },
    stdin: conf({ cniVersion: '1.1.0', 'cni.dev/valid-attachments': [{ ifname: 'eth0' }] }),
    code: 7,
    msg: 'cni.dev/valid-attachments[0].containerID',
  },
  {
    name: 'calico-ipam: bad flags',
    program: 'calico-ipam',
    env: { ...base, CNI_COMMAND: 'ADD' },
    stdin: conf({ ipam: { type: 'calico-ipam', assign_ipv6: 1 } }),
    code: 7,
    msg: 'ipam.assign_ipv6',
  },
  // Flags (code 100)
  {
    name: 'unknown flag',
    args: ['--frobnicate'],
    env: {},
    stdin: '',
    code: 100,
    msg: 'failed to parse CLI flags',
  },
  {
    name: 'calico-ipam -upgrade',
    program: 'calico-ipam',
    args: ['-upgrade'],
    env: {},
    stdin: '',
    code: 100,
    msg: 'failed to parse CLI flags',
  },
];

function run(
  program: string,
  args: string[],
  env: Record<string, string | undefined>,
  stdin: string,
  cwd?: string,
) {
  const clean: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  for (const [k, v] of Object.entries(env)) if (v !== undefined) clean[k] = v;
  return spawnSync(join(bin, program), args, {
    env: clean,
    input: stdin,
    encoding: 'utf8',
    timeout: 30_000,
    ...(cwd ? { cwd } : {}),
  });
}

describe('malformed input → one CNI error object, non-zero exit', () => {
  it('has at least 30 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const r = run(c.program ?? 'calico', c.args ?? [], c.env, c.stdin);
    expect(r.status, r.stderr).toBe(1);
    const obj = JSON.parse(r.stdout);
    expect(Object.keys(obj).sort()).toEqual(expect.arrayContaining(['cniVersion', 'code', 'msg']));
    expect(obj.code).toBe(c.code);
    expect(obj.msg).toContain(c.msg);
    expect(typeof obj.cniVersion).toBe('string');
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/\n\s+at .*:\d+:\d+/);
  });
});

describe('well-formed requests that need no datastore', () => {
  it('VERSION with and without a request', () => {
    const r = run('calico', [], { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"0.3.1"}');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      cniVersion: '0.3.1',
      supportedVersions: ['0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
    });
    const r2 = run('calico-ipam', [], { CNI_COMMAND: 'VERSION' }, '');
    expect(JSON.parse(r2.stdout).cniVersion).toBe('1.1.0');
  });

  it('-v prints the version on both names', () => {
    for (const p of ['calico', 'calico-ipam']) {
      const r = run(p, ['-v'], {}, '');
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^v\d+\.\d+\.\d+\n$/);
    }
  });

  it('the environment is the runtime’s alone: a .env or bunfig.toml in the working directory is not read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cni-dotenv-'));
    try {
      writeFileSync(join(dir, '.env'), 'CNI_COMMAND=VERSION\n');
      writeFileSync(join(dir, 'bunfig.toml'), 'preload = ["./nothing-here.ts"]\n');
      const r = run('calico', [], { ...base }, conf({}), dir);
      expect(r.status).toBe(1);
      expect(JSON.parse(r.stdout)).toMatchObject({
        code: 4,
        msg: 'required env variables [CNI_COMMAND] missing',
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the error object carries the config’s cniVersion', () => {
    const r = run('calico', [], { ...base, CNI_COMMAND: 'ADD' }, conf({ cniVersion: '0.3.1', mtu: 'x' }));
    expect(JSON.parse(r.stdout)).toMatchObject({ cniVersion: '0.3.1', code: 7 });
  });
});
