import { describe, expect, test } from 'vitest';
import { harness } from '../testing-internal/harness.js';

const SEED_V1 = `apiVersion: v1
kind: ipPool
metadata:
  cidr: 192.168.0.0/16
spec:
  ipip:
    enabled: true
  nat-outgoing: true
`;

const pool = (name: string, cidr: string, extra = '') => `apiVersion: projectcalico.org/v3
kind: IPPool
metadata:
  name: ${name}
spec:
  cidr: ${cidr}${extra}
`;

describe('apply', () => {
  test('warns about rule fields the dataplane does not enforce, and still stores the policy', async () => {
    const h = harness();
    const r = await h.run('apply -f -', {
      stdin: `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: api, namespace: prod}
spec:
  selector: app == 'api'
  ingress:
  - action: Allow
    protocol: TCP
    http: {methods: [GET], paths: [{prefix: /public}]}
  - action: Allow
    source: {services: {name: frontend}}
`,
    });
    expect(r).toEqual({
      code: 0,
      stdout: "Successfully applied 1 'NetworkPolicy' resource(s)\n",
      stderr:
        "Warning: NetworkPolicy 'prod/api': spec.ingress[0].http is not enforced (HTTP matches need an application-layer proxy, which this dataplane does not run); the Allow rule matches nothing\n",
    });
    const stored = await h.datastore.get('NetworkPolicy', 'api', { namespace: 'prod' });
    expect(stored.spec.ingress?.[0]?.http).toEqual({ methods: ['GET'], paths: [{ prefix: '/public' }] });
  });

  test('the seed: a v1 ipPool from stdin is converted, noted on stderr, and applied', async () => {
    const h = harness();
    const r = await h.run('apply -f -', { stdin: SEED_V1 });
    expect(r).toEqual({
      code: 0,
      stdout: "Successfully applied 1 'IPPool' resource(s)\n",
      stderr:
        'document 1 of stdin: converted v1 ipPool 192.168.0.0/16 to projectcalico.org/v3 IPPool 192-168-0-0-16\n',
    });
    const stored = JSON.parse(
      (await h.dump())['/calico/resources/v3/projectcalico.org/ippools/192-168-0-0-16']!,
    );
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
  });

  test('the seed: re-applying with mode cross-subnet updates the pool in place', async () => {
    const h = harness();
    await h.run('apply -f -', { stdin: SEED_V1 });
    const before = await h.datastore.get('IPPool', '192-168-0-0-16');
    const r = await h.run('apply -f -', {
      stdin: SEED_V1.replace('enabled: true', 'enabled: true\n    mode: cross-subnet'),
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("Successfully applied 1 'IPPool' resource(s)\n");
    const after = await h.datastore.get('IPPool', '192-168-0-0-16');
    expect(after.spec.ipipMode).toBe('CrossSubnet');
    expect(after.metadata.uid).toBe(before.metadata.uid);
    expect(after.metadata.creationTimestamp).toBe(before.metadata.creationTimestamp);
  });

  test('initializes the datastore like upstream: ClusterInformation and the three tiers', async () => {
    const h = harness();
    await h.run('apply -f -', { stdin: pool('p', '198.19.0.0/16') });
    const keys = Object.keys(await h.dump());
    expect(keys).toEqual([
      '/calico/resources/v3/projectcalico.org/clusterinformations/default',
      '/calico/resources/v3/projectcalico.org/ippools/p',
      '/calico/resources/v3/projectcalico.org/tiers/default',
      '/calico/resources/v3/projectcalico.org/tiers/kube-admin',
      '/calico/resources/v3/projectcalico.org/tiers/kube-baseline',
    ]);
    const ci = await h.datastore.get('ClusterInformation', 'default');
    expect(ci.spec).toEqual({ clusterGUID: '0123456789abcdef0123456789abcdef', datastoreReady: true });
  });

  test('re-applying what get -o yaml printed writes nothing', async () => {
    const h = harness();
    await h.run('apply -f -', { stdin: pool('p', '198.19.0.0/16') });
    const yaml = (await h.run('get ippool p -o yaml')).stdout;
    const rev = await h.store.revision();
    const r = await h.run('apply -f -', { stdin: yaml });
    expect(r.stdout).toBe("Successfully applied 1 'IPPool' resource(s)\n");
    expect(await h.store.revision()).toBe(rev);
  });

  test('a stale resourceVersion is an update conflict', async () => {
    const h = harness();
    await h.run('apply -f -', { stdin: pool('p', '198.19.0.0/16') });
    const yaml = (await h.run('get ippool p -o yaml')).stdout;
    await h.run('apply -f -', { stdin: pool('p', '198.19.0.0/16', '\n  natOutgoing: true') });
    const r = await h.run('apply -f -', { stdin: yaml.replace('natOutgoing: true', 'natOutgoing: false') });
    expect(r).toEqual({
      code: 1,
      stdout: '',
      stderr: "Failed to apply 'IPPool' resource: [update conflict: IPPool(p)]\n",
    });
  });

  test('labels are merged over the stored ones, as upstream does', async () => {
    const h = harness();
    await h.run('apply -f -', {
      stdin: pool('p', '198.19.0.0/16').replace('name: p', 'name: p\n  labels: {a: "1"}'),
    });
    await h.run('apply -f -', {
      stdin: pool('p', '198.19.0.0/16').replace('name: p', 'name: p\n  labels: {b: "2"}'),
    });
    expect((await h.datastore.get('IPPool', 'p')).metadata.labels).toEqual({ a: '1', b: '2' });
  });

  test('ClusterInformation is read-only', async () => {
    const h = harness();
    const doc =
      'apiVersion: projectcalico.org/v3\nkind: ClusterInformation\nmetadata: {name: default}\nspec: {}\n';
    const r = await h.run('apply -f -', { stdin: doc });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'Failed to execute command: 1 of 1 document is invalid; nothing was written:\n' +
        '  document 1 of stdin (ClusterInformation "default"): operation apply is not supported on ClusterInformation: resource is readonly\n',
    );
    expect(await h.dump()).toEqual({});
  });

  test('every invalid document is reported with its file, index, field and rule; nothing is written', async () => {
    const h = harness();
    h.files['/m/pools.yaml'] = [
      pool('good', '198.19.0.0/16'),
      pool('bad-size', '198.18.0.0/16', '\n  blockSize: 99'),
      pool('Bad_Name', '10.0.0.0/8', '\n  ipipMode: Sometimes\n  bogus: 1'),
    ].join('---\n');
    const r = await h.run('apply -f /m/pools.yaml');
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines[0]).toBe('Failed to execute command: 2 of 3 documents are invalid; nothing was written:');
    expect(lines[1]).toBe(
      '  document 2 of /m/pools.yaml (IPPool "bad-size"): spec.blockSize: must be between 20 and 32 for IPv4',
    );
    expect(
      lines.slice(2).every((l) => l.startsWith('  document 3 of /m/pools.yaml (IPPool "Bad_Name"): ')),
    ).toBe(true);
    expect(lines.some((l) => l.includes('metadata.name: '))).toBe(true);
    expect(lines.some((l) => l.includes('spec.ipipMode: must be one of: Never, Always, CrossSubnet'))).toBe(
      true,
    );
    expect(lines.some((l) => l.includes('spec.bogus: is not a known field'))).toBe(true);
    expect(await h.dump()).toEqual({});
  });

  test('a YAML syntax error names the file and line', async () => {
    const h = harness();
    h.files['/x.yaml'] = 'kind: IPPool\nmetadata: [\n';
    const r = await h.run('apply -f /x.yaml');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^Failed to execute command: \/x\.yaml:\d+:\d+: cannot decode: /);
  });

  test('a missing file and an empty file', async () => {
    const h = harness();
    expect(await h.run('apply -f /nope.yaml')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'Failed to execute command: open /nope.yaml: no such file or directory\n',
    });
    h.files['/empty.yaml'] = '# nothing\n';
    expect(await h.run('apply -f /empty.yaml')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'No resources specified in file /empty.yaml\n',
    });
    expect(await h.run('apply -f /empty.yaml --skip-empty')).toEqual({
      code: 0,
      stdout: 'No resources specified\n',
      stderr: '',
    });
  });

  test('a directory: manifests in lexical order, subdirectories only with -R', async () => {
    const h = harness();
    h.files['/d/b.yaml'] = pool('b', '198.19.1.0/24');
    h.files['/d/a.json'] = JSON.stringify(
      JSON.parse(
        JSON.stringify({
          apiVersion: 'projectcalico.org/v3',
          kind: 'IPPool',
          metadata: { name: 'a' },
          spec: { cidr: '198.19.2.0/24' },
        }),
      ),
    );
    h.files['/d/notes.txt'] = 'not a manifest';
    h.files['/d/sub/c.yml'] = pool('c', '198.19.3.0/24');
    expect((await h.run('apply -f /d')).stdout).toBe("Successfully applied 2 'IPPool' resource(s)\n");
    expect((await h.run('apply -f /d -R')).stdout).toBe("Successfully applied 3 'IPPool' resource(s)\n");
  });

  test('JSON lists and kind: List wrappers; mixed kinds say resource(s)', async () => {
    const h = harness();
    const list = {
      apiVersion: 'v1',
      kind: 'List',
      items: [
        {
          apiVersion: 'projectcalico.org/v3',
          kind: 'IPPool',
          metadata: { name: 'a' },
          spec: { cidr: '198.19.2.0/24' },
        },
        {
          apiVersion: 'projectcalico.org/v3',
          kind: 'GlobalNetworkSet',
          metadata: { name: 'g' },
          spec: { nets: ['198.18.0.0/24'] },
        },
      ],
    };
    const r = await h.run('apply -f -', { stdin: JSON.stringify(list) });
    expect(r.stdout).toBe('Successfully applied 2 resource(s)\n');
  });

  test('namespaced kinds default to namespace "default"; -n sets it; a mismatch is refused', async () => {
    const h = harness();
    const ns =
      'apiVersion: projectcalico.org/v3\nkind: NetworkSet\nmetadata:\n  name: s\nspec:\n  nets: [198.18.0.0/24]\n';
    expect((await h.run('apply -f -', { stdin: ns })).code).toBe(0);
    expect((await h.run('apply -f - -n prod', { stdin: ns })).code).toBe(0);
    expect(
      (await h.datastore.list('NetworkSet')).items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`),
    ).toEqual(['default/s', 'prod/s']);
    const r = await h.run('apply -f - -n dev', {
      stdin: ns.replace('name: s', 'name: s\n  namespace: prod'),
    });
    expect(r.stderr).toContain(
      'metadata.namespace: resource namespace does not match client namespace. prod != dev',
    );
    const r2 = await h.run('apply -f - -n dev', { stdin: pool('p', '198.19.0.0/16') });
    expect(r2.stderr).toContain('(IPPool "p"): metadata.namespace: IPPool is not namespaced');
  });
});

describe('create', () => {
  test('creates; an existing resource fails unless --skip-exists', async () => {
    const h = harness();
    expect((await h.run('create -f -', { stdin: pool('p', '198.19.0.0/16') })).stdout).toBe(
      "Successfully created 1 'IPPool' resource(s)\n",
    );
    expect(await h.run('create -f -', { stdin: pool('p', '198.19.0.0/16') })).toEqual({
      code: 1,
      stdout: '',
      stderr: "Failed to create 'IPPool' resource: [resource already exists: IPPool(p)]\n",
    });
    expect((await h.run('create -f - --skip-exists', { stdin: pool('p', '198.19.0.0/16') })).stdout).toBe(
      "Successfully created 1 'IPPool' resource(s)\n",
    );
  });

  test('partial success names how many were created', async () => {
    const h = harness();
    await h.run('create -f -', { stdin: pool('b', '198.19.1.0/24') });
    const r = await h.run('create -f -', {
      stdin: [pool('a', '198.19.0.0/24'), pool('b', '198.19.1.0/24'), pool('c', '198.19.2.0/24')].join(
        '---\n',
      ),
    });
    expect(r).toEqual({
      code: 1,
      stdout: "Partial success: created the first 2 out of 3 'IPPool' resources:\n",
      stderr: 'Hit error: [resource already exists: IPPool(b)]\n',
    });
  });

  test('a resourceVersion in a create is refused before anything is written', async () => {
    const h = harness();
    const r = await h.run('create -f -', {
      stdin: pool('p', '198.19.0.0/16').replace('name: p', 'name: p\n  resourceVersion: "5"'),
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('metadata.resourceVersion: must not be set when creating a resource');
    expect(await h.dump()).toEqual({});
  });
});

describe('replace', () => {
  test("replaces an existing resource; a missing one is upstream's does-not-exist error", async () => {
    const h = harness();
    await h.run('create -f -', { stdin: pool('p', '198.19.0.0/16') });
    expect(
      (await h.run('replace -f -', { stdin: pool('p', '198.19.0.0/16', '\n  disabled: true') })).stdout,
    ).toBe("Successfully replaced 1 'IPPool' resource(s)\n");
    expect((await h.datastore.get('IPPool', 'p')).spec.disabled).toBe(true);
    expect(await h.run('replace -f -', { stdin: pool('q', '198.18.0.0/16') })).toEqual({
      code: 1,
      stdout: '',
      stderr: "Failed to replace 'IPPool' resource: resource does not exist: IPPool(q) with error: <nil>\n",
    });
  });
});

describe('delete', () => {
  test('by kind and names, case-insensitive and plural kinds', async () => {
    const h = harness();
    await h.run('create -f -', {
      stdin: [pool('a', '198.19.0.0/24'), pool('b', '198.19.1.0/24')].join('---\n'),
    });
    expect(await h.run('delete IPPools a b')).toEqual({
      code: 0,
      stdout: "Successfully deleted 2 'IPPool' resource(s)\n",
      stderr: '',
    });
    expect((await h.datastore.list('IPPool')).items).toEqual([]);
  });

  test('a missing resource fails unless --skip-not-exists', async () => {
    const h = harness();
    expect(await h.run('delete ippool nope')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "Failed to delete 'IPPool' resource: resource does not exist: IPPool(nope) with error: <nil>\n\n",
    });
    expect(await h.run('delete ippool nope --skip-not-exists')).toEqual({
      code: 0,
      stdout: "Successfully deleted 1 'IPPool' resource(s)\n",
      stderr: '',
    });
  });

  test('by file, namespaced, with -n', async () => {
    const h = harness();
    const ns =
      'apiVersion: projectcalico.org/v3\nkind: NetworkSet\nmetadata:\n  name: s\nspec:\n  nets: [198.18.0.0/24]\n';
    await h.run('apply -f - -n prod', { stdin: ns });
    expect((await h.run('delete -f - -n prod', { stdin: ns })).stdout).toBe(
      "Successfully deleted 1 'NetworkSet' resource(s)\n",
    );
  });

  test('unknown kind, and neither kind nor file', async () => {
    const h = harness();
    expect(await h.run('delete bogus x')).toEqual({
      code: 1,
      stdout: '',
      stderr: "resource type 'bogus' is not supported\n",
    });
    expect((await h.run('delete')).stderr).toBe(
      "Invalid option: 'calicoctl delete'. Use flag '--help' to read about a specific subcommand.\n",
    );
  });
});
