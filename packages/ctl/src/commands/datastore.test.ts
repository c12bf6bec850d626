import { describe, expect, test } from 'vitest';
import { harness } from '../testing-internal/harness.js';

const RESOURCES = `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: pool-a, labels: {zone: a}}
spec: {cidr: 198.19.0.0/16, ipipMode: CrossSubnet}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: allow-dns}
spec: {selector: all(), egress: [{action: Allow, protocol: UDP, destination: {ports: [53]}}]}
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: web, namespace: prod}
spec: {selector: app == 'web', ingress: [{action: Allow}]}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: node-1}
spec: {bgp: {ipv4Address: 198.18.0.1/24}}
---
apiVersion: projectcalico.org/v3
kind: Profile
metadata: {name: kns.prod}
spec: {labelsToApply: {pcns.projectcalico.org/name: prod}}
`;

describe('datastore migrate', () => {
  test('lock and unlock flip datastoreReady', async () => {
    const h = harness();
    expect(await h.run('datastore migrate lock')).toEqual({
      code: 0,
      stdout: 'Datastore locked.\n',
      stderr: '',
    });
    expect((await h.datastore.get('ClusterInformation', 'default')).spec.datastoreReady).toBe(false);
    expect(await h.run('datastore migrate unlock')).toEqual({
      code: 0,
      stdout: 'Datastore unlocked.\n',
      stderr: '',
    });
    expect((await h.datastore.get('ClusterInformation', 'default')).spec.datastoreReady).toBe(true);
  });

  test('export needs a locked datastore', async () => {
    const h = harness();
    await h.run('apply -f -', { stdin: RESOURCES });
    expect(await h.run('datastore migrate export')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'datastore is not locked. Run the `calicoctl datastore migrate lock` command in order to begin migration\n',
    });
  });

  test('export then import into an empty datastore reproduces every key and value', async () => {
    const src = harness();
    await src.run('apply -f -', { stdin: RESOURCES });
    await src.store.put(
      '/calico/ipam/v2/handle/k8s-pod-network.abc',
      '{"block":{"198.19.0.0/26":1},"deleted":false}',
    );
    await src.store.put('/calico/ipam/v2/config', '{"strict_affinity":false,"auto_allocate_blocks":true}');
    await src.store.put('/calico/felix/v2/no-region/host/node-1/status', '{"time":"x"}');
    await src.run('datastore migrate lock');
    const exp = await src.run('datastore migrate export');
    expect(exp.code).toBe(0);
    expect(exp.stdout.split('===\n')).toHaveLength(3);
    expect(exp.stderr).toContain('Exporting ippools... 1\n');
    expect(exp.stderr).toContain('Exported 8 resource(s), ClusterInformation and 2 other key(s).\n');

    const dst = harness();
    dst.files['/export.yaml'] = exp.stdout;
    const imp = await dst.run('datastore migrate import -f /export.yaml');
    expect(imp.stdout).toBe(
      'Successfully applied 9 resource(s)\nImporting IPAM resources\nSuccessfully applied 2 IPAM resource(s)\nDatastore information successfully imported.\n',
    );
    expect(imp.code).toBe(0);
    const want = await src.dump();
    delete want['/calico/felix/v2/no-region/host/node-1/status'];
    expect(await dst.dump()).toEqual(want);
  });

  test('import refuses a datastore that is not empty, and a malformed file, writing nothing', async () => {
    const src = harness();
    await src.run('datastore migrate lock');
    const exp = (await src.run('datastore migrate export')).stdout;
    const dst = harness();
    await dst.run('apply -f -', { stdin: RESOURCES });
    const before = await dst.dump();
    dst.files['/e'] = exp;
    const r = await dst.run('datastore migrate import -f /e');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^Datastore already has Calico data \(\d+ key\(s\) under \/calico\/, e\.g\. \/calico\/resources\/v3\/projectcalico\.org\/clusterinformations\/default\)\. Import needs an empty datastore/,
    );
    expect(await dst.dump()).toEqual(before);

    const empty = harness();
    empty.files['/bad'] = 'not an export';
    expect((await empty.run('datastore migrate import -f /bad')).stderr).toBe(
      "Imported file: /bad is improperly formatted. Try recreating with 'calicoctl datastore migrate export'\n",
    );
    empty.files['/bad2'] = exp
      .replace('kind: TierList', 'kind: TierList\nbogus: 1')
      .replace('defaultAction: Deny', 'defaultAction: Maybe');
    const r2 = await empty.run('datastore migrate import -f /bad2');
    expect(r2.code).toBe(1);
    expect(r2.stderr).toContain('spec.defaultAction');
    expect(await empty.dump()).toEqual({});
  });
});
