import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EtcdServer, etcdAvailable, startEtcd } from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type CalicoctlRun, calicoctlExecutable } from './testing-internal/executable.js';
import { MALFORMED } from './testing-internal/malformed.js';
import { SAMPLE_DOCUMENTS, SAMPLE_RESOURCES } from './testing-internal/samples.js';

const EXE = calicoctlExecutable();

function calicoctl(
  args: string[],
  opts: { stdin?: string; env?: Record<string, string> } = {},
): Promise<CalicoctlRun> {
  return EXE.run(args, opts);
}

/** Every key and value under /calico, as etcdctl prints them. */
async function etcdDump(etcd: EtcdServer): Promise<string> {
  const r = await etcd.etcdctl(['get', '--prefix', '/calico']);
  if (r.code !== 0) throw new Error(`etcdctl failed: ${r.stderr}`);
  return r.stdout;
}

async function etcdRevision(etcd: EtcdServer): Promise<number> {
  const r = await etcd.etcdctl(['get', '/', '--prefix', '--keys-only', '--limit=1', '-w', 'json']);
  return (JSON.parse(r.stdout) as { header: { revision: number } }).header.revision;
}

beforeAll(async () => {
  await EXE.ensureBuilt();
}, 120_000);

describe.runIf(etcdAvailable())(`${EXE.name} against etcd`, () => {
  let etcd: EtcdServer;
  let dir: string;
  let cfg: string;
  beforeAll(async () => {
    etcd = await startEtcd({ tls: true });
    dir = await mkdtemp(join(tmpdir(), 'calicoctl-int-'));
    cfg = join(dir, 'calicoctl.cfg');
    const tls = etcd.tls!;
    // The seed's configuration file, as written (v1 calicoApiConfig, "etcdv2"), pointed at this etcd.
    await writeFile(
      cfg,
      `apiVersion: v1
kind: calicoApiConfig
metadata:
spec:
  datastoreType: "etcdv2"
  etcdEndpoints: "${etcd.endpoints.join(',')}"
  etcdKeyFile: "${tls.keyFile}"
  etcdCertFile: "${tls.certFile}"
  etcdCACertFile: "${tls.caFile}"
`,
    );
  }, 60_000);
  afterAll(async () => {
    await etcd?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  // The commands are written with the option after the subcommand, as the seed does.
  const ctl = (cmd: string, opts: { stdin?: string } = {}) => {
    const [sub, ...rest] = cmd.split(' ');
    const args = sub === 'datastore' ? [sub, ...rest, '-c', cfg] : [sub!, ...rest, '--config', cfg];
    return calicoctl(args, opts);
  };
  test('the seed: get ipPool, apply a v1 ipPool from stdin, change its IPIP mode', async () => {
    const empty = await ctl('get ipPool');
    expect(empty).toEqual({ code: 0, stdout: 'NAME   CIDR   SELECTOR   \n\n', stderr: '' });

    const v1 = (ipip: string) => `apiVersion: v1
kind: ipPool
metadata:
  cidr: 192.168.0.0/16
spec:
  ipip:
${ipip}
  nat-outgoing: true
`;
    const first = await ctl('apply -f -', { stdin: v1('    enabled: true') });
    expect(first).toEqual({
      code: 0,
      stdout: "Successfully applied 1 'IPPool' resource(s)\n",
      stderr:
        'document 1 of stdin: converted v1 ipPool 192.168.0.0/16 to projectcalico.org/v3 IPPool 192-168-0-0-16\n',
    });
    const second = await ctl('apply -f -', { stdin: v1('    enabled: true\n    mode: always') });
    expect(second.code).toBe(0);
    expect(second.stdout).toBe("Successfully applied 1 'IPPool' resource(s)\n");

    expect(await ctl('get ipPool')).toEqual({
      code: 0,
      stdout:
        'NAME             CIDR             SELECTOR   \n192-168-0-0-16   192.168.0.0/16   all()      \n\n',
      stderr: '',
    });
    const wide = await ctl('get ippools -o wide');
    expect(wide.stdout).toContain(
      '192-168-0-0-16   192.168.0.0/16   true   Always     Never       false      false              all()',
    );

    const key = await etcd.etcdctl([
      'get',
      '/calico/resources/v3/projectcalico.org/ippools/192-168-0-0-16',
      '--print-value-only',
    ]);
    const stored = JSON.parse(key.stdout);
    expect(stored.kind).toBe('IPPool');
    expect(stored.spec).toEqual({
      cidr: '192.168.0.0/16',
      vxlanMode: 'Never',
      ipipMode: 'Always',
      natOutgoing: true,
      blockSize: 26,
      nodeSelector: 'all()',
      allowedUses: ['Workload', 'Tunnel'],
      assignmentMode: 'Automatic',
    });
    expect(await ctl('get ippool nope')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'resource does not exist: IPPool(nope) with error: <nil>\n',
    });
  });

  test('version: client and cluster; a mismatched cluster version stops other commands', async () => {
    const v = await ctl('version');
    expect(v.code).toBe(0);
    expect(v.stdout).toMatch(
      /^Client Version: {4}v3\.32\.1\nGit commit: {8}\S+\nCluster Version: {3}unknown\nCluster Type: {6}unknown\n$/,
    );
    await etcd.etcdctl([
      'put',
      '/calico/resources/v3/projectcalico.org/clusterinformations/default',
      JSON.stringify({
        kind: 'ClusterInformation',
        apiVersion: 'projectcalico.org/v3',
        metadata: { name: 'default', uid: 'u-ci', creationTimestamp: '2025-01-01T00:00:00Z' },
        spec: { calicoVersion: 'v3.31.2', clusterType: 'k8s,bgp', datastoreReady: true },
      }),
    ]);
    const blocked = await ctl('get ippools');
    expect(blocked).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'Version mismatch.\nClient Version:   v3.32.1\nCluster Version:  3.31.2\nUse --allow-version-mismatch to override.\n\n',
    });
    expect((await ctl('get ippools --allow-version-mismatch')).code).toBe(0);
    expect((await calicoctl(['--allow-version-mismatch', 'get', 'ippools', '-c', cfg])).code).toBe(0);
    await etcd.etcdctl(['del', '/calico/resources/v3/projectcalico.org/clusterinformations/default']);
  });

  test('configuration from the environment, bare and CALICO_ forms', async () => {
    const tls = etcd.tls!;
    const env = {
      ETCD_ENDPOINTS: etcd.endpoints.join(','),
      ETCD_KEY_FILE: tls.keyFile,
      ETCD_CERT_FILE: tls.certFile,
      ETCD_CA_CERT_FILE: tls.caFile,
    };
    const missing = join(dir, 'absent.cfg');
    const bare = await calicoctl(['get', 'ippools', '-o', 'custom-columns=NAME'], {
      env: { ...env, DATASTORE_TYPE: 'etcdv3' },
    });
    expect(bare.stdout).toBe('NAME             \n192-168-0-0-16   \n\n');
    const prefixed = await calicoctl(['get', 'ippools', '-o', 'custom-columns=NAME'], {
      env: { ...env, DATASTORE_TYPE: 'kubernetes', CALICO_DATASTORE_TYPE: 'etcdv3' },
    });
    expect(prefixed.stdout).toBe('NAME             \n192-168-0-0-16   \n\n');
    const named = await calicoctl(['get', 'ippools', '-c', missing]);
    expect(named.code).toBe(1);
    expect(named.stderr).toContain(
      `Failed to create Calico API client: config file ${missing} does not exist`,
    );
  });

  describe('round trip of every kind', () => {
    beforeAll(async () => {
      const r = await ctl('apply -f -', { stdin: SAMPLE_DOCUMENTS });
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe(`Successfully applied ${SAMPLE_RESOURCES.length} resource(s)\n`);
    });
    test.each(SAMPLE_RESOURCES)(
      '$kind: get -o yaml, apply it back: nothing changes',
      async ({ kind, name, namespace }) => {
        const got = await ctl(`get ${kind} ${name}${namespace ? ` -n ${namespace}` : ''} -o yaml`);
        expect(got.code).toBe(0);
        const rv = /\n {2}resourceVersion: "(\d+)"\n/.exec(got.stdout)?.[1];
        expect(rv).toBeDefined();
        const before = await etcdDump(etcd);
        const revision = await etcdRevision(etcd);
        const applied = await ctl('apply -f -', { stdin: got.stdout });
        expect(applied).toEqual({
          code: 0,
          stdout: `Successfully applied 1 '${kind}' resource(s)\n`,
          stderr: '',
        });
        expect(await etcdDump(etcd)).toBe(before);
        expect(await etcdRevision(etcd)).toBe(revision);
        const again = await ctl(`get ${kind} ${name}${namespace ? ` -n ${namespace}` : ''} -o yaml`);
        expect(again.stdout).toBe(got.stdout);
      },
    );
    test('ClusterInformation is read-only: refused, nothing changes', async () => {
      const got = await ctl('get clusterinformation default -o yaml');
      const before = await etcdDump(etcd);
      const r = await ctl('apply -f -', { stdin: got.stdout });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(
        'operation apply is not supported on ClusterInformation: resource is readonly',
      );
      expect(await etcdDump(etcd)).toBe(before);
    });
  });

  test(`${MALFORMED.length} malformed or invalid documents: each refused naming its field, etcd unchanged`, async () => {
    const before = await etcdDump(etcd);
    const revision = await etcdRevision(etcd);
    for (const m of MALFORMED) {
      const r = await ctl('apply -f -', { stdin: m.doc });
      expect(r.code, m.what).toBe(1);
      expect(r.stdout, m.what).toBe('');
      expect(r.stderr, m.what).toContain(m.names);
    }
    expect(await etcdDump(etcd)).toBe(before);
    expect(await etcdRevision(etcd)).toBe(revision);
  }, 120_000);

  test('datastore migrate: lock, export, import into a second empty etcd: identical key by key', async () => {
    const ipamKeys: [string, string][] = [
      [
        '/calico/ipam/v2/assignment/ipv4/block/198.19.0.0-26',
        '{"cidr":"198.19.0.0/26","affinity":"host:node-1","allocations":[0,null],"unallocated":[1],"attributes":[{"handle_id":"k8s-pod-network.abc","secondary":{"node":"node-1"}}],"sequenceNumber":1700000000000000001,"sequenceNumberForAllocation":{"0":1700000000000000001},"deleted":false}',
      ],
      ['/calico/ipam/v2/host/node-1/ipv4/block/198.19.0.0-26', '{"state":"confirmed","deleted":false}'],
      ['/calico/ipam/v2/handle/k8s-pod-network.abc', '{"block":{"198.19.0.0/26":1},"deleted":false}'],
    ];
    for (const [k, v] of ipamKeys) expect((await etcd.etcdctl(['put', k, v])).code).toBe(0);

    expect(await ctl('datastore migrate export')).toMatchObject({ code: 1 });
    expect((await ctl('datastore migrate lock')).stdout).toBe('Datastore locked.\n');
    const exported = await ctl('datastore migrate export');
    expect(exported.code).toBe(0);
    expect(exported.stderr).toContain('Exporting ippools... 2\n');
    const file = join(dir, 'export.yaml');
    await writeFile(file, exported.stdout);

    const second = await startEtcd();
    try {
      const cfg2 = join(dir, 'second.cfg');
      await writeFile(
        cfg2,
        `apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nmetadata: {}\nspec:\n  datastoreType: etcdv3\n  etcdEndpoints: ${second.endpoints.join(',')}\n`,
      );
      const imported = await calicoctl(['datastore', 'migrate', 'import', '-f', file, '-c', cfg2]);
      expect(imported.code).toBe(0);
      expect(imported.stdout).toContain('Datastore information successfully imported.\n');
      expect(await etcdDump(second)).toBe(await etcdDump(etcd));

      const again = await calicoctl(['datastore', 'migrate', 'import', '-f', file, '-c', cfg2]);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('Datastore already has Calico data');
      expect(await etcdDump(second)).toBe(await etcdDump(etcd));

      expect((await calicoctl(['datastore', 'migrate', 'unlock', '-c', cfg2])).stdout).toBe(
        'Datastore unlocked.\n',
      );
    } finally {
      await second.stop();
    }
    expect((await ctl('datastore migrate unlock')).stdout).toBe('Datastore unlocked.\n');
  }, 120_000);
});
