import { describe, expect, it } from 'vitest';
import { admit } from './admission.js';
import type { ApiServerError } from './errors.js';
import { servedResources } from './resources.js';

const r = (kind: string) => servedResources('kubernetes').find((x) => x.kind === kind)!;
const np = (meta: Record<string, unknown>) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'NetworkPolicy',
  metadata: meta,
  spec: { selector: "app == 'db'" },
});
const refused = (f: () => unknown) => {
  try {
    f();
    return undefined;
  } catch (e) {
    return [(e as ApiServerError).code, (e as Error).message];
  }
};

describe('admit', () => {
  it('places an object in the namespace of the URL, and a generated name', () => {
    const a = admit({
      verb: 'create',
      resource: r('NetworkPolicy'),
      namespace: 'prod',
      body: np({ generateName: 'db-' }),
      nameSuffix: () => 'x7k2q',
    });
    expect(a.name).toBe('db-x7k2q');
    expect(a.resource.metadata).toMatchObject({ name: 'db-x7k2q', namespace: 'prod' });
  });

  it('fills in the envelope and drops a namespace from a cluster-scoped kind, as Kubernetes does', () => {
    const a = admit({
      verb: 'create',
      resource: r('Tier'),
      body: { metadata: { name: 't1', namespace: 'x' }, spec: { order: 5 } },
    });
    expect(a.resource).toMatchObject({
      apiVersion: 'projectcalico.org/v3',
      kind: 'Tier',
      metadata: { name: 't1' },
    });
    expect((a.resource.metadata as Record<string, unknown>).namespace).toBeUndefined();
  });

  it('refuses names, namespaces and kinds that disagree with the URL', () => {
    expect(
      refused(() =>
        admit({
          verb: 'update',
          resource: r('NetworkPolicy'),
          namespace: 'prod',
          name: 'db',
          body: np({ name: 'web' }),
        }),
      ),
    ).toEqual(['bad-request', 'the name of the object (web) does not match the name on the URL (db)']);
    expect(
      refused(() =>
        admit({
          verb: 'create',
          resource: r('NetworkPolicy'),
          namespace: 'prod',
          body: np({ name: 'db', namespace: 'dev' }),
        }),
      )?.[0],
    ).toBe('bad-request');
    expect(
      refused(() => admit({ verb: 'create', resource: r('Tier'), body: np({ name: 'db' }) }))?.[1],
    ).toMatch(/the kind in the data \(NetworkPolicy\) does not match/);
    expect(
      refused(() =>
        admit({ verb: 'create', resource: r('IPPool'), body: { apiVersion: 'v1', kind: 'IPPool' } }),
      )?.[1],
    ).toMatch(/the API version in the data \(v1\)/);
  });

  it('refuses what calicoctl refuses, in its words', () => {
    expect(
      refused(() =>
        admit({
          verb: 'create',
          resource: r('NetworkPolicy'),
          namespace: 'prod',
          body: np({ name: 'knp.default.x' }),
        }),
      ),
    ).toEqual([
      'method-not-allowed',
      'operation create or apply is not supported on NetworkPolicy(knp.default.x): kubernetes network policies must be managed through the kubernetes API',
    ]);
  });

  it('warns as calicoctl warns, and keeps the resource', () => {
    const body = np({ name: 'api' });
    (body.spec as Record<string, unknown>).ingress = [
      { action: 'Allow', protocol: 'TCP', http: { methods: ['GET'] } },
    ];
    const a = admit({ verb: 'create', resource: r('NetworkPolicy'), namespace: 'prod', body });
    expect(a.warnings).toEqual([
      "NetworkPolicy 'prod/api': spec.ingress[0].http is not enforced (HTTP matches need an application-layer proxy, which this dataplane does not run); the Allow rule matches nothing",
    ]);
  });
});
