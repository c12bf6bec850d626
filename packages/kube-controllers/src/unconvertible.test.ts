/**
 * An object that cannot become a valid Calico resource is reported with its name and skipped; the
 * controller keeps going and writes the others. The Kubernetes side is a key store holding the
 * objects as stored (a bad one put there raw, as no API server would let us), the Calico side the
 * in-memory datastore, which validates as the etcd one does.
 */
import { loggerOf } from '@calico-ts/api/log';
import { KVDatastore, MemoryKVStore } from '@calico-ts/datastore';
import { PODS_PREFIX } from '@calico-ts/datastore/internal';
import { afterEach, describe, expect, it } from 'vitest';
import { MirrorController } from './mirror-controller.js';
import { WepLabelController } from './wep-label-controller.js';

interface Logged {
  fields: Record<string, unknown>;
  msg: string;
}

function recorder() {
  const warnings: Logged[] = [];
  return {
    warnings,
    log: loggerOf((level, msg, fields) => {
      if (level === 'warn') warnings.push({ fields: { ...fields }, msg });
    }),
  };
}

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

const MIRRORS = [
  {
    name: 'namespace',
    kind: 'Profile',
    prefix: 'kns.',
    key: (n: string) => `/calico/resources/v3/projectcalico.org/profiles/kns.${n}`,
    good: { spec: { ingress: [{ action: 'Allow' }], labelsToApply: { 'pcns.team': 'a' } } },
    bad: { spec: { ingress: [{ action: 'Allow' }], labelsToApply: { 'pcns.team': 5 } } },
    resourceName: (n: string) => `kns.${n}`,
  },
  {
    name: 'serviceaccount',
    kind: 'Profile',
    prefix: 'ksa.',
    key: (n: string) => `/calico/resources/v3/projectcalico.org/profiles/ksa.shop.${n}`,
    good: { spec: { labelsToApply: { 'pcsa.projectcalico.org/name': 'x' } } },
    bad: { spec: { labelsToApply: { 'pcsa.projectcalico.org/name': ['x'] } } },
    resourceName: (n: string) => `ksa.shop.${n}`,
  },
  {
    name: 'policy',
    kind: 'NetworkPolicy',
    prefix: 'knp.default.',
    key: (n: string) => `/calico/resources/v3/projectcalico.org/networkpolicies/shop/knp.default.${n}`,
    good: { spec: { tier: 'default', order: 1000, selector: "app == 'web'", types: ['Ingress'] } },
    bad: { spec: { tier: 'default', order: 1000, selector: "app == 'web", types: ['Ingress'] } },
    resourceName: (n: string) => `shop/knp.default.${n}`,
  },
] as const;

describe.each(MIRRORS)('the $name controller and an object it cannot convert', (c) => {
  it('reports it once with its name, skips it, and writes the others', async () => {
    const kubeKv = new MemoryKVStore();
    const calicoKv = new MemoryKVStore();
    const kube = new KVDatastore(kubeKv, { backend: 'memory' });
    const calico = new KVDatastore(calicoKv, { backend: 'memory' });
    const doc = (n: string, body: object) =>
      JSON.stringify({ kind: c.kind, apiVersion: 'projectcalico.org/v3', metadata: { name: n }, ...body });
    await kubeKv.put(c.key('good'), doc(c.resourceName('good').split('/').pop()!, c.good));
    await kubeKv.put(c.key('bad'), doc(c.resourceName('bad').split('/').pop()!, c.bad));
    const { log, warnings } = recorder();
    const skipped: string[] = [];
    const reports: { failed: readonly string[]; skipped?: readonly string[] }[] = [];
    const ctl = new MirrorController({
      name: c.name,
      kind: c.kind,
      namePrefix: c.prefix,
      kubernetes: kube,
      calico,
      log,
      onSkipped: (n) => skipped.push(n),
      onReconciled: (r) => reports.push(r),
    });
    stops.push(() => ctl.stop());
    await ctl.start();
    await ctl.reconcile();

    const held = (await calico.list(c.kind)).items.map((r) =>
      r.metadata.namespace ? `${r.metadata.namespace}/${r.metadata.name}` : r.metadata.name,
    );
    expect(held).toContain(c.resourceName('good'));
    expect(held).not.toContain(c.resourceName('bad'));
    expect(skipped).toEqual([c.resourceName('bad')]); // twice reconciled, reported once
    const w = warnings.find((x) => x.fields.object === c.resourceName('bad'));
    expect(w?.msg).toMatch(/cannot convert .* skipped/);
    expect(w?.fields.controller).toBe(c.name);
    expect(reports.at(-1)).toMatchObject({ failed: [], skipped: [c.resourceName('bad')] });
  });
});

describe('the workloadendpoint controller and a Pod it cannot read', () => {
  it('reports the Pod with its name, skips it, and labels the other endpoints', async () => {
    const kubeKv = new MemoryKVStore();
    const calico = new KVDatastore(new MemoryKVStore(), { backend: 'memory' });
    const pod = (name: string, labels: unknown) =>
      JSON.stringify({ metadata: { name, namespace: 'shop', labels }, spec: { serviceAccountName: 'sa' } });
    await kubeKv.put(`${PODS_PREFIX}shop/good`, pod('good', { app: 'web' }));
    await kubeKv.put(`${PODS_PREFIX}shop/bad`, pod('bad', 'app=web'));
    for (const p of ['good', 'bad']) {
      await calico.create({
        apiVersion: 'projectcalico.org/v3',
        kind: 'WorkloadEndpoint',
        metadata: { name: `n1-k8s-${p}-eth0`, namespace: 'shop' },
        spec: { orchestrator: 'k8s', node: 'n1', pod: p, endpoint: 'eth0', interfaceName: `cali${p}` },
      });
    }
    const { log, warnings } = recorder();
    const skipped: string[] = [];
    const ctl = new WepLabelController({
      kubernetes: kubeKv,
      calico,
      log,
      onSkipped: (n) => skipped.push(n),
    });
    stops.push(() => ctl.stop());
    await ctl.start();

    const labels = async (p: string) =>
      (await calico.get('WorkloadEndpoint', `n1-k8s-${p}-eth0`, { namespace: 'shop' })).metadata.labels;
    expect((await labels('good'))?.app).toBe('web');
    expect((await labels('bad'))?.app).toBeUndefined();
    expect(skipped).toEqual([`${PODS_PREFIX}shop/bad`]);
    expect(warnings.find((x) => x.fields.object === `${PODS_PREFIX}shop/bad`)?.fields.err).toBe(
      'metadata.labels is not a map of strings',
    );
  });
});
