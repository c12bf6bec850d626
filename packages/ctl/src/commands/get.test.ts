import { describe, expect, test } from 'vitest';
import { harness } from '../testing-internal/harness.js';

async function seeded() {
  const h = harness();
  const docs = `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a}
spec: {cidr: 198.19.0.0/16, natOutgoing: true}
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: web, namespace: prod}
spec: {order: 100, selector: app == 'web'}
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: db}
spec: {selector: app == 'db'}
`;
  const r = await h.run('apply -f -', { stdin: docs });
  expect(r.code).toBe(0);
  return h;
}

describe('get', () => {
  test("ps table, kinds case-insensitive singular or plural (the seed's `get ipPool`)", async () => {
    const h = await seeded();
    const want = {
      code: 0,
      stdout: 'NAME     CIDR            SELECTOR   \npool-a   198.19.0.0/16   all()      \n\n',
      stderr: '',
    };
    expect(await h.run('get ipPool')).toEqual(want);
    expect(await h.run('get IPPOOLS')).toEqual(want);
    expect(await h.run('get pools')).toEqual(want);
  });

  test("a missing resource: upstream's text, exit 1, found ones still printed", async () => {
    const h = await seeded();
    expect(await h.run('get ippool nope')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'resource does not exist: IPPool(nope) with error: <nil>\n',
    });
    const r = await h.run('get ippool pool-a nope');
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('NAME     CIDR            SELECTOR   \npool-a   198.19.0.0/16   all()      \n\n');
    expect(r.stderr).toBe('resource does not exist: IPPool(nope) with error: <nil>\n');
  });

  test('unknown kind', async () => {
    const h = harness();
    expect(await h.run('get bogus')).toEqual({
      code: 1,
      stdout: '',
      stderr: "Failed to get resources: resource type 'bogus' is not supported\n",
    });
  });

  test('namespaces: default, -n, -A (and -a), NAMESPACE column', async () => {
    const h = await seeded();
    expect((await h.run('get networkpolicy')).stdout).toBe('NAME   TIER      \ndb     default   \n\n');
    expect((await h.run('get np -n prod')).stdout).toBe(
      'NAMESPACE   NAME   TIER      \nprod        web    default   \n\n',
    );
    const all =
      "NAMESPACE   NAME   TIER      ORDER   SELECTOR       \ndefault     db     default   <nil>   app == 'db'    \nprod        web    default   100     app == 'web'   \n\n";
    expect((await h.run('get policies -A -o wide')).stdout).toBe(all);
    expect((await h.run('get policies -a -o wide')).stdout).toBe(all);
    expect((await h.run('get np web -A')).stderr).toBe(
      'cannot use --all-namespace flag for getting a single resource\n',
    );
    expect((await h.run('get np -A -n prod')).stderr).toBe(
      'Failed to get resources: cannot use both --namespace and --all-namespaces flags at the same time\n',
    );
    expect((await h.run('get ippool -n prod')).stderr).toBe(
      'Failed to get resources: IPPool is not namespaced\n',
    );
  });

  test('-o yaml of one resource and of a list; -o json', async () => {
    const h = await seeded();
    const one = (await h.run('get ippool pool-a -o yaml')).stdout;
    expect(one).toMatch(
      /^apiVersion: projectcalico.org\/v3\nkind: IPPool\nmetadata:\n {2}creationTimestamp: "2025-01-02T03:04:05Z"\n {2}name: pool-a\n {2}resourceVersion: "\d+"\n {2}uid: /,
    );
    const list = (await h.run('get ippool -o yaml')).stdout;
    expect(list).toMatch(
      /^apiVersion: projectcalico.org\/v3\nitems:\n- apiVersion: projectcalico.org\/v3\n {2}kind: IPPool\n/,
    );
    expect(list).toMatch(/\nkind: IPPoolList\nmetadata:\n {2}resourceVersion: "\d+"\n$/);
    const json = JSON.parse((await h.run('get ippool pool-a -o json')).stdout);
    expect(json.kind).toBe('IPPool');
    expect(json.spec.cidr).toBe('198.19.0.0/16');
  });

  test('--export strips cluster-specific metadata when names are given', async () => {
    const h = await seeded();
    const out = (await h.run('get np web -n prod -o yaml --export')).stdout;
    expect(out).not.toMatch(/uid|resourceVersion|creationTimestamp|namespace:/);
    expect(out).toContain('name: web');
  });

  test('custom-columns and go templates', async () => {
    const h = await seeded();
    expect((await h.run('get ippool -o custom-columns=CIDR,NAT')).stdout).toBe(
      'CIDR            NAT    \n198.19.0.0/16   true   \n\n',
    );
    expect(
      (await h.run(['get', 'ippool', '-o', 'go-template={{range .items}}{{.metadata.name}}{{"\\n"}}{{end}}']))
        .stdout,
    ).toBe('pool-a\n');
    h.files['/t.tmpl'] = '{{range .}}{{range .Items}}{{.ObjectMeta.Name}}={{.Spec.CIDR}}{{end}}{{end}}';
    expect((await h.run('get ippool -o go-template-file=/t.tmpl')).stdout).toBe('pool-a=198.19.0.0/16');
    expect(await h.run('get ippool -o bogus')).toEqual({
      code: 1,
      stdout: '',
      stderr: "unrecognized output format 'bogus'\n",
    });
  });

  test('by file', async () => {
    const h = await seeded();
    h.files['/q.yaml'] = 'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: pool-a}\n';
    expect((await h.run('get -f /q.yaml -o custom-columns=NAME')).stdout).toBe('NAME     \npool-a   \n\n');
  });

  test('tiers are listed by order; the built-in profile is listed', async () => {
    const h = await seeded();
    expect((await h.run('get tiers')).stdout).toBe(
      'NAME            ORDER      \nkube-admin      1000       \ndefault         1000000    \nkube-baseline   10000000   \n\n',
    );
    expect((await h.run('get profiles')).stdout).toBe(
      `${'NAME'.padEnd(30)}\n${'projectcalico-default-allow'.padEnd(30)}\n\n`,
    );
  });

  test('clusterinformation table', async () => {
    const h = await seeded();
    expect((await h.run('get clusterinfo')).stdout).toBe(
      'NAME      CLUSTERGUID                        CLUSTERTYPE   CALICOVERSION   DATASTOREREADY   \n' +
        'default   0123456789abcdef0123456789abcdef                                 true             \n\n',
    );
  });
});
