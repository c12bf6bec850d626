import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EtcdServer, etcdAvailable, startEtcd } from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type CalicoctlRun, calicoctlExecutable } from './testing-internal/executable.js';

const EXE = calicoctlExecutable();

function calicoctl(args: string[], stdin = ''): Promise<CalicoctlRun> {
  return EXE.run(args, { stdin });
}

function pool(name: string, spec: string): string {
  return `apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: ${name}}\nspec: ${spec}\n`;
}

interface Snapshot {
  revision: number;
  kvs: { key: string; value: string; mod_revision: number }[];
}

/** Every key under /calico with its value and revision, and the store revision, read by etcdctl. */
async function snapshot(etcd: EtcdServer): Promise<Snapshot> {
  const r = await etcd.etcdctl(['get', '--prefix', '/calico', '-w', 'json']);
  expect(r.code, r.stderr).toBe(0);
  const doc = JSON.parse(r.stdout) as {
    header: { revision: number };
    kvs?: { key: string; value?: string; mod_revision: number }[];
  };
  return {
    revision: doc.header.revision,
    kvs: (doc.kvs ?? []).map((kv) => ({
      key: Buffer.from(kv.key, 'base64').toString(),
      value: Buffer.from(kv.value ?? '', 'base64').toString(),
      mod_revision: kv.mod_revision,
    })),
  };
}

beforeAll(async () => {
  await EXE.ensureBuilt();
}, 120_000);

describe.runIf(etcdAvailable())(`${EXE.name}: IPPool checks against stored pools`, () => {
  let etcd: EtcdServer | undefined;
  let dir: string | undefined;
  const ctl = (args: string[], stdin: string) =>
    calicoctl([...args, '-c', join(dir!, 'calicoctl.cfg')], stdin);

  beforeAll(async () => {
    etcd = await startEtcd();
    dir = await mkdtemp(join(tmpdir(), 'calicoctl-ippool-int-'));
    await writeFile(
      join(dir, 'calicoctl.cfg'),
      `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: ${etcd.clientUrl}\n`,
    );
  }, 60_000);

  afterAll(async () => {
    await etcd?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('an overlapping pool and a CIDR or blockSize change are refused, exit 1, nothing written', async () => {
    const first = await ctl(['create', '-f', '-'], pool('pool-a', '{cidr: 10.10.0.0/16, natOutgoing: true}'));
    expect(first).toMatchObject({ code: 0, stdout: "Successfully created 1 'IPPool' resource(s)\n" });
    const six = await ctl(['apply', '-f', '-'], pool('pool-6', '{cidr: "fd00:10::/48"}'));
    expect(six).toMatchObject({ code: 0, stdout: "Successfully applied 1 'IPPool' resource(s)\n" });
    const before = await snapshot(etcd!);
    expect(before.kvs.map((kv) => kv.key)).toEqual(
      expect.arrayContaining([
        '/calico/resources/v3/projectcalico.org/ippools/pool-a',
        '/calico/resources/v3/projectcalico.org/ippools/pool-6',
      ]),
    );

    const overlap =
      'IPPool "pool-b" was not written: spec.cidr: IPPool(pool-b) CIDR overlaps with IPPool(pool-a) CIDR 10.10.0.0/16';
    const created = await ctl(['create', '-f', '-'], pool('pool-b', '{cidr: 10.10.128.0/17}'));
    expect(created).toEqual({
      code: 1,
      stdout: '',
      stderr: `Failed to create 'IPPool' resource: [${overlap}]\n`,
    });
    const applied = await ctl(['apply', '-f', '-'], pool('pool-b', '{cidr: 10.0.0.0/8}'));
    expect(applied).toEqual({
      code: 1,
      stdout: '',
      stderr: `Failed to apply 'IPPool' resource: [${overlap.replace('10.10.128.0/17', '10.0.0.0/8')}]\n`,
    });
    const v6 = await ctl(['create', '-f', '-'], pool('pool-6b', '{cidr: "fd00:10:0:1::/64"}'));
    expect(v6).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'Failed to create \'IPPool\' resource: [IPPool "pool-6b" was not written: spec.cidr: ' +
        'IPPool(pool-6b) CIDR overlaps with IPPool(pool-6) CIDR fd00:10::/48]\n',
    });

    const moved = await ctl(['apply', '-f', '-'], pool('pool-a', '{cidr: 10.20.0.0/16, natOutgoing: true}'));
    expect(moved).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'Failed to apply \'IPPool\' resource: [IPPool "pool-a" was not written: spec.cidr: ' +
        'IPPool CIDR cannot be modified (stored 10.10.0.0/16, given 10.20.0.0/16)]\n',
    });
    const resized = await ctl(
      ['replace', '-f', '-'],
      pool('pool-a', '{cidr: 10.10.0.0/16, natOutgoing: true, blockSize: 24}'),
    );
    expect(resized).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'Failed to replace \'IPPool\' resource: IPPool "pool-a" was not written: spec.blockSize: ' +
        'IPPool BlockSize cannot be modified (stored 26, given 24)\n',
    });
    // Applying the stored pool unchanged is fine and writes nothing.
    const same = await ctl(['apply', '-f', '-'], pool('pool-a', '{cidr: 10.10.0.0/16, natOutgoing: true}'));
    expect(same).toMatchObject({ code: 0, stdout: "Successfully applied 1 'IPPool' resource(s)\n" });

    expect(await snapshot(etcd!)).toEqual(before);

    // A pool next to the stored ones is created.
    const next = await ctl(['create', '-f', '-'], pool('pool-c', '{cidr: 10.11.0.0/16}'));
    expect(next).toMatchObject({ code: 0, stdout: "Successfully created 1 'IPPool' resource(s)\n" });
    const after = await snapshot(etcd!);
    expect(after.kvs.map((kv) => kv.key)).toEqual(
      [...before.kvs.map((kv) => kv.key), '/calico/resources/v3/projectcalico.org/ippools/pool-c'].sort(),
    );
  }, 60_000);
});
