/**
 * calico-apiserver behind the real aggregator, driven with the real kubectl: kube-apiserver (with
 * the aggregation layer), etcd and calico-apiserver in a network namespace of their own (see
 * testing-internal/aggregated-cluster.ts), the crd.projectcalico.org CRDs as the datastore, and
 * calico-apiserver running as a service account with exactly the RBAC it documents.
 *
 * What a user sees: `kubectl get` tables, `apply` creating then configuring (the CRD object in the
 * datastore changes), an invalid policy refused with calicoctl's texts and nothing stored, `-o
 * yaml`, `delete`, namespaced policies, `get -w`, patches, and Forbidden for a user without RBAC,
 * both from kube-apiserver and from calico-apiserver's own SubjectAccessReview.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { findKubectl, missingKubePrerequisites } from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AggregatedCluster,
  APISERVER_MAIN,
  APISERVER_PORT,
  CRDS,
  ROOT,
  startAggregatedCluster,
  userKubeconfig,
} from './testing-internal/aggregated-cluster.js';

const missing = missingKubePrerequisites({
  root: true,
  crds: CRDS,
  tools: ['ip', 'nsenter', 'curl', 'openssl'],
  files: [[APISERVER_MAIN, 'pnpm build']],
});
if (missing.length > 0) {
  describe('calico-apiserver through the aggregator', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const CALICOCTL = join(ROOT, 'packages/ctl/bin/calicoctl');

const GNP = (order: number) => `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: allow-web
spec:
  order: ${order}
  selector: app == 'web'
  ingress:
  - action: Allow
    protocol: TCP
    destination:
      ports: [80]
`;

const BAD_GNP = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata:
  name: bad-gnp
spec:
  selector: "app == "
  ingress:
  - action: Allowed
`;

describe.skipIf(missing.length > 0)('calico-apiserver through the aggregator', () => {
  let c: AggregatedCluster;
  const file = async (name: string, text: string) => {
    const path = join(c.dir, name);
    await writeFile(path, text);
    return path;
  };
  const ok = async (args: string[], o: { input?: string; kubeconfig?: string } = {}) => {
    const r = await c.kubectl(args, o);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr}`);
    return r.stdout;
  };
  const crdObject = async (plural: string, name: string, ns?: string) => {
    const r = await c.kubectl([
      'get',
      `${plural}.crd.projectcalico.org`,
      name,
      '-o',
      'json',
      ...(ns ? ['-n', ns] : []),
    ]);
    return r.code === 0 ? JSON.parse(r.stdout) : undefined;
  };

  beforeAll(async () => {
    c = await startAggregatedCluster();
  }, 180_000);
  afterAll(async () => {
    await c?.stop();
  }, 60_000);

  it('lists the kinds with upstream’s short names in kubectl api-resources', async () => {
    const out = await ok(['api-resources', '--api-group=projectcalico.org', '--no-headers']);
    const rows = out
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/));
    const gnp = rows.find((r) => r[0] === 'globalnetworkpolicies');
    expect(gnp).toEqual([
      'globalnetworkpolicies',
      'gnp,cgnp,calicoglobalnetworkpolicies',
      'projectcalico.org/v3',
      'false',
      'GlobalNetworkPolicy',
    ]);
    expect(rows.find((r) => r[0] === 'networkpolicies')).toEqual([
      'networkpolicies',
      'cnp,caliconetworkpolicy,caliconetworkpolicies',
      'projectcalico.org/v3',
      'true',
      'NetworkPolicy',
    ]);
    expect(rows).toHaveLength(21);
    // kube-apiserver took this server's aggregated discovery into its own.
    const agg = await c.exec([
      'curl',
      '-sS',
      '--cacert',
      c.ca.certFile,
      '--cert',
      join(c.dir, 'admin.pem'),
      '--key',
      join(c.dir, 'admin-key.pem'),
      '-H',
      'Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
      `https://${c.ip}:6443/apis`,
    ]);
    const group = JSON.parse(agg.stdout).items.find(
      (g: { metadata: { name: string } }) => g.metadata.name === 'projectcalico.org',
    );
    expect(group.versions[0]).toMatchObject({ version: 'v3', freshness: 'Current' });
    expect(group.versions[0].resources).toHaveLength(21);
    // The schemas behind kubectl explain come from this server's OpenAPI v3.
    // The aggregator merges an APIService's OpenAPI a moment after it is Available.
    let explain = '';
    for (const end = Date.now() + 30_000; ; ) {
      const r = await c.kubectl(['explain', 'ippools.projectcalico.org.spec.blockSize']);
      explain = r.stdout;
      if (r.code === 0 || Date.now() > end) break;
      await new Promise((res) => setTimeout(res, 500));
    }
    expect(explain).toMatch(/GROUP:\s+projectcalico.org\nKIND:\s+IPPool\nVERSION:\s+v3/);
    expect(explain).toMatch(/FIELD: blockSize <integer>/);
  });

  it('get ippools.projectcalico.org prints a table of the pools', async () => {
    expect((await c.kubectl(['get', 'ippools.projectcalico.org'])).stderr).toMatch(/No resources found/);
    const pool = await file(
      'pool.yaml',
      'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: pool-a}\nspec: {cidr: 198.19.0.0/16}\n',
    );
    expect(await ok(['apply', '-f', pool])).toBe('ippool.projectcalico.org/pool-a created\n');
    const table = await ok(['get', 'ippools.projectcalico.org']);
    expect(table).toMatch(/^NAME\s+CREATED AT\npool-a\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$/);
    // Calico's defaults, stored in the CRD.
    expect((await crdObject('ippools', 'pool-a')).spec).toMatchObject({
      cidr: '198.19.0.0/16',
      blockSize: 26,
      ipipMode: 'Never',
      vxlanMode: 'Never',
      nodeSelector: 'all()',
    });
  });

  it('apply creates a GlobalNetworkPolicy, then configures it, then leaves it unchanged', async () => {
    const path = await file('gnp.yaml', GNP(100));
    expect(await ok(['apply', '-f', path])).toBe('globalnetworkpolicy.projectcalico.org/allow-web created\n');
    const stored = await crdObject('globalnetworkpolicies', 'allow-web');
    expect(stored.spec).toMatchObject({ order: 100, selector: "app == 'web'", types: ['Ingress'] });
    await writeFile(path, GNP(200));
    expect(await ok(['apply', '-f', path])).toBe(
      'globalnetworkpolicy.projectcalico.org/allow-web configured\n',
    );
    expect((await crdObject('globalnetworkpolicies', 'allow-web')).spec.order).toBe(200);
    expect(await ok(['apply', '-f', path])).toBe(
      'globalnetworkpolicy.projectcalico.org/allow-web unchanged\n',
    );
  });

  it('refuses an invalid policy with calicoctl’s message, and stores nothing', async () => {
    const path = await file('bad.yaml', BAD_GNP);
    const r = await c.kubectl(['apply', '-f', path]);
    expect(r.code).toBe(1);
    // kubectl words an Invalid Status from its causes, one line per broken rule.
    expect(r.stderr).toMatch(/^The GlobalNetworkPolicy "bad-gnp" is invalid: \n\* /);
    // Each is the rule text calicoctl prints for the document.
    const ctl = await c.exec([process.execPath, CALICOCTL, 'validate', '-f', path]);
    const rules = ctl.stderr
      .split('\n')
      .map((l) => /\(GlobalNetworkPolicy "bad-gnp"\): (.*)$/.exec(l)?.[1])
      .filter((x): x is string => x !== undefined);
    expect(rules).toHaveLength(2);
    for (const rule of rules) expect(r.stderr).toContain(`* ${rule}\n`);
    expect(await crdObject('globalnetworkpolicies', 'bad-gnp')).toBeUndefined();
    // An unknown field (kubectl's default --validate=strict leaves it to the server): refused too.
    const unknown = await c.kubectl(['apply', '-f', '-'], {
      input: GNP(1).replace('name: allow-web', 'name: typo').replace('  order: 1', '  ordr: 1'),
    });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(
      'The GlobalNetworkPolicy "typo" is invalid: spec.ordr: is not a known field; did you mean "order"?',
    );
    expect(await crdObject('globalnetworkpolicies', 'typo')).toBeUndefined();
  });

  it('get -o yaml shows the projectcalico.org/v3 object', async () => {
    const yaml = await ok(['get', 'gnp', 'allow-web', '-o', 'yaml']);
    expect(yaml).toMatch(/^apiVersion: projectcalico.org\/v3\nkind: GlobalNetworkPolicy\n/);
    expect(yaml).toContain('  name: allow-web\n');
    expect(yaml).toContain('  order: 200\n');
  });

  it('patches (strategic by default, merge, JSON) and labels', async () => {
    expect(await ok(['patch', 'gnp', 'allow-web', '-p', '{"spec":{"order":300}}'])).toBe(
      'globalnetworkpolicy.projectcalico.org/allow-web patched\n',
    );
    await ok(['patch', 'gnp', 'allow-web', '--type=merge', '-p', '{"spec":{"egress":[{"action":"Deny"}]}}']);
    await ok([
      'patch',
      'gnp',
      'allow-web',
      '--type=json',
      '-p',
      '[{"op":"replace","path":"/spec/order","value":301}]',
    ]);
    await ok(['label', 'gnp', 'allow-web', 'team=web']);
    const spec = (await crdObject('globalnetworkpolicies', 'allow-web')).spec;
    // types was defaulted when the policy was made and is kept, as Calico keeps it.
    expect(spec).toMatchObject({ order: 301, egress: [{ action: 'Deny' }], types: ['Ingress'] });
    expect(await ok(['get', 'gnp', '-l', 'team=web', '-o', 'name'])).toBe(
      'globalnetworkpolicy.projectcalico.org/allow-web\n',
    );
    await ok(['label', 'gnp', 'allow-web', 'team-']);
    expect((await c.kubectl(['get', 'gnp', '-l', 'team=web'])).stderr).toMatch(/No resources found/);
    const ssa = await c.kubectl(['apply', '--server-side', '-f', join(c.dir, 'gnp.yaml')]);
    expect(ssa.code).toBe(1);
    expect(ssa.stderr).toContain('server-side apply is not supported by calico-apiserver');
  });

  it('get -w reports a policy as it is created and deleted', async () => {
    const watch = c.spawnIn([
      findKubectl()!,
      `--kubeconfig=${c.adminKubeconfig}`,
      'get',
      'gnp',
      '-w',
      '--output-watch-events',
      '--no-headers',
    ]);
    let out = '';
    watch.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const seen = async (re: RegExp) => {
      const end = Date.now() + 15_000;
      while (!re.test(out)) {
        if (Date.now() > end) throw new Error(`kubectl get -w printed ${JSON.stringify(out)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    try {
      await seen(/ADDED\s+allow-web/);
      await ok(['apply', '-f', '-'], { input: GNP(5).replace('allow-web', 'watched') });
      await seen(/ADDED\s+watched/);
      await ok(['delete', 'gnp', 'watched']);
      await seen(/DELETED\s+watched/);
    } finally {
      watch.kill('SIGTERM');
    }
  });

  it('delete removes the policy from the datastore', async () => {
    expect(await ok(['delete', 'gnp', 'allow-web'])).toBe(
      'globalnetworkpolicy.projectcalico.org "allow-web" deleted\n',
    );
    expect(await crdObject('globalnetworkpolicies', 'allow-web')).toBeUndefined();
    const again = await c.kubectl(['delete', 'gnp', 'allow-web']);
    expect(again.stderr).toContain(
      'Error from server (NotFound): globalnetworkpolicies.projectcalico.org "allow-web" not found',
    );
  });

  it('keeps a NetworkPolicy in its namespace', async () => {
    await ok(['create', 'namespace', 'prod']);
    const np = `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: db
spec:
  selector: app == 'db'
  ingress:
  - action: Allow
    source:
      selector: app == 'api'
`;
    expect(await ok(['apply', '-n', 'prod', '-f', '-'], { input: np })).toBe(
      'networkpolicy.projectcalico.org/db created\n',
    );
    expect((await crdObject('networkpolicies', 'db', 'prod')).spec.selector).toBe("app == 'db'");
    expect(await ok(['get', 'networkpolicies.projectcalico.org', '-n', 'prod', '--no-headers'])).toMatch(
      /^db\s+\d{4}-/,
    );
    expect(await ok(['get', 'cnp', '-A', '--no-headers'])).toMatch(/^prod\s+db\s+\d{4}-/);
    expect((await c.kubectl(['get', 'cnp', 'db', '-n', 'default'])).stderr).toContain('(NotFound)');
  });

  it('a user without RBAC is Forbidden, by kube-apiserver and by calico-apiserver’s own review', async () => {
    const alice = await userKubeconfig(c, 'alice', ['devs']);
    const r = await c.kubectl(['get', 'gnp'], { kubeconfig: alice.path });
    expect(r.stderr).toContain('Error from server (Forbidden)');
    expect(r.stderr).toContain(
      'User "alice" cannot list resource "globalnetworkpolicies" in API group "projectcalico.org" at the cluster scope',
    );
    // Straight to calico-apiserver with her client certificate: its SubjectAccessReview refuses.
    const direct = await c.exec([
      'curl',
      '-sS',
      '--cacert',
      c.servingCa.certFile,
      '--cert',
      alice.cert.certFile,
      '--key',
      alice.cert.keyFile,
      '-H',
      'X-Remote-User: admin',
      '-H',
      'X-Remote-Group: system:masters',
      `https://${c.ip}:${APISERVER_PORT}/apis/projectcalico.org/v3/globalnetworkpolicies`,
    ]);
    expect(JSON.parse(direct.stdout)).toMatchObject({
      kind: 'Status',
      code: 403,
      reason: 'Forbidden',
      message:
        'globalnetworkpolicies.projectcalico.org is forbidden: User "alice" cannot list resource "globalnetworkpolicies" in API group "projectcalico.org" at the cluster scope',
    });
    // Given the right to list, she can, through the aggregator and straight.
    await ok([
      'create',
      'clusterrole',
      'gnp-reader',
      '--verb=get,list,watch',
      '--resource=globalnetworkpolicies.projectcalico.org',
    ]);
    await ok([
      'create',
      'clusterrolebinding',
      'alice-gnp-reader',
      '--clusterrole=gnp-reader',
      '--user=alice',
    ]);
    const end = Date.now() + 30_000;
    for (;;) {
      const again = await c.kubectl(['get', 'gnp'], { kubeconfig: alice.path });
      if (again.code === 0) break;
      if (Date.now() > end) throw new Error(`alice still refused: ${again.stderr}`);
      await new Promise((res) => setTimeout(res, 500));
    }
    // Writing stays refused.
    const write = await c.kubectl(['apply', '-f', '-'], { kubeconfig: alice.path, input: GNP(1) });
    expect(write.stderr).toContain('Forbidden');
  });

  it('deletes an IPPool as calicoctl does (disabled, affinities released, then gone)', async () => {
    expect(await ok(['delete', 'ippools.projectcalico.org', 'pool-a'])).toBe(
      'ippool.projectcalico.org "pool-a" deleted\n',
    );
    expect(await crdObject('ippools', 'pool-a')).toBeUndefined();
  });

  it('answers no one without credentials, except its health checks', async () => {
    const base = `https://${c.ip}:${APISERVER_PORT}`;
    const curl = (path: string) =>
      c.exec(['curl', '-sS', '--cacert', c.servingCa.certFile, `${base}${path}`]);
    expect((await curl('/healthz')).stdout).toBe('ok');
    expect(JSON.parse((await curl('/apis')).stdout)).toMatchObject({ code: 401, reason: 'Unauthorized' });
  });

  it('has no failure of its own in its log', async () => {
    const log = await readFile(c.apiServerLog, 'utf8');
    const errors = log.split('\n').filter((l) => l.includes('"level":"error"'));
    expect(errors).toEqual([]);
  });
});
