import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import * as z from 'zod';
import { isKind } from '../kinds.js';
import { validateResource } from '../resources/validate.js';
import {
  type Admission,
  admitObject,
  CRD_BUNDLE_FILE,
  CRD_KINDS,
  type CrdObject,
  type CustomResourceDefinition,
  crdExamples,
  crdFileName,
  crdManifests,
  crdProbes,
  renderCrdFiles,
  type StructuralSchema,
  toStructuralSchema,
} from './index.js';

const DEPLOY_CRDS = join(import.meta.dirname, '../../../../deploy/crds');

/** Upstream's set (libcalico-go/config/crd): kind → plural, scope. */
const UPSTREAM: Record<string, [plural: string, scope: 'Cluster' | 'Namespaced']> = {
  BGPConfiguration: ['bgpconfigurations', 'Cluster'],
  BGPFilter: ['bgpfilters', 'Cluster'],
  BGPPeer: ['bgppeers', 'Cluster'],
  BlockAffinity: ['blockaffinities', 'Cluster'],
  CalicoNodeStatus: ['caliconodestatuses', 'Cluster'],
  ClusterInformation: ['clusterinformations', 'Cluster'],
  FelixConfiguration: ['felixconfigurations', 'Cluster'],
  GlobalNetworkPolicy: ['globalnetworkpolicies', 'Cluster'],
  GlobalNetworkSet: ['globalnetworksets', 'Cluster'],
  HostEndpoint: ['hostendpoints', 'Cluster'],
  IPAMBlock: ['ipamblocks', 'Cluster'],
  IPAMConfig: ['ipamconfigs', 'Cluster'],
  IPAMHandle: ['ipamhandles', 'Cluster'],
  IPPool: ['ippools', 'Cluster'],
  IPReservation: ['ipreservations', 'Cluster'],
  KubeControllersConfiguration: ['kubecontrollersconfigurations', 'Cluster'],
  StagedGlobalNetworkPolicy: ['stagedglobalnetworkpolicies', 'Cluster'],
  Tier: ['tiers', 'Cluster'],
  NetworkPolicy: ['networkpolicies', 'Namespaced'],
  NetworkSet: ['networksets', 'Namespaced'],
  StagedNetworkPolicy: ['stagednetworkpolicies', 'Namespaced'],
  StagedKubernetesNetworkPolicy: ['stagedkubernetesnetworkpolicies', 'Namespaced'],
};

const manifests = crdManifests();
const byKind = new Map(manifests.map((m) => [m.spec.names.kind, m]));
const schemaOf = (kind: string): StructuralSchema =>
  byKind.get(kind)!.spec.versions[0].schema.openAPIV3Schema;

function spec(m: CustomResourceDefinition): StructuralSchema {
  return m.spec.versions[0].schema.openAPIV3Schema.properties!.spec!;
}

/** Every node of a schema with its path. */
function* nodes(s: unknown, path = '$'): Generator<[string, Record<string, unknown>]> {
  const n = s as Record<string, unknown>;
  yield [path, n];
  for (const [k, v] of Object.entries((n.properties ?? {}) as Record<string, unknown>))
    yield* nodes(v, `${path}.${k}`);
  if (n.items) yield* nodes(n.items, `${path}[]`);
  if (n.additionalProperties && typeof n.additionalProperties === 'object') {
    yield* nodes(n.additionalProperties, `${path}{}`);
  }
}

describe('the CRD set', () => {
  it('is exactly upstream’s: kinds, plurals, scopes, names', () => {
    expect(
      Object.fromEntries(manifests.map((m) => [m.spec.names.kind, [m.spec.names.plural, m.spec.scope]])),
    ).toEqual(UPSTREAM);
    expect(CRD_KINDS.map((k) => k.kind).sort()).toEqual(Object.keys(UPSTREAM).sort());
    for (const m of manifests) {
      const { kind, plural } = m.spec.names;
      expect(m.metadata.name).toBe(`${plural}.crd.projectcalico.org`);
      expect(m.spec.group).toBe('crd.projectcalico.org');
      expect(m.spec.names).toEqual({ kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() });
      expect(m.spec.versions).toHaveLength(1);
      expect(m.spec.versions[0]).toMatchObject({ name: 'v1', served: true, storage: true });
      expect(m.spec.versions[0]).not.toHaveProperty('subresources');
    }
  });

  it('has a status where upstream has one, and only there', () => {
    const withStatus = manifests
      .filter((m) => m.spec.versions[0].schema.openAPIV3Schema.properties?.status)
      .map((m) => m.spec.names.kind);
    expect(withStatus.sort()).toEqual(['CalicoNodeStatus', 'IPPool', 'KubeControllersConfiguration']);
  });

  it('has the top level upstream has', () => {
    for (const m of manifests) {
      const top = m.spec.versions[0].schema.openAPIV3Schema;
      expect(top.type).toBe('object');
      expect(top.properties?.apiVersion).toEqual({ type: 'string' });
      expect(top.properties?.kind).toEqual({ type: 'string' });
      expect(top.properties?.metadata).toEqual({ type: 'object' });
      expect(top.properties?.spec?.type).toBe('object');
    }
  });
});

describe('the committed files in deploy/crds', () => {
  it('are what the generator writes now (run `pnpm crds` after changing a schema)', () => {
    const files = renderCrdFiles();
    expect(readdirSync(DEPLOY_CRDS).sort()).toEqual(files.map((f) => f.path).sort());
    for (const f of files) {
      expect(readFileSync(join(DEPLOY_CRDS, f.path), 'utf8'), f.path).toBe(f.text);
    }
  });

  it('hold one CRD per file, named as upstream names them, and the bundle holds them all', () => {
    const files = renderCrdFiles();
    for (const m of manifests) {
      const f = files.find((x) => x.path === crdFileName(m.spec.names.plural));
      expect(f?.path).toBe(`crd.projectcalico.org_${m.spec.names.plural}.yaml`);
      const docs = parseAllDocuments(f!.text);
      expect(docs).toHaveLength(1);
      expect(JSON.parse(JSON.stringify(docs[0]!.toJS()))).toEqual(JSON.parse(JSON.stringify(m)));
    }
    const bundle = parseAllDocuments(files.find((f) => f.path === CRD_BUNDLE_FILE)!.text);
    expect(bundle.map((d) => d.toJS().metadata.name)).toEqual(manifests.map((m) => m.metadata.name));
  });
});

describe('every schema', () => {
  it('is structural: a type on every node, no $ref, no junctors but int-or-string, maps xor properties', () => {
    // The bundle, parsed back: what kubectl sends is the YAML, not the objects.
    const parsed = parseAllDocuments(renderCrdFiles().find((f) => f.path === CRD_BUNDLE_FILE)!.text);
    for (const doc of parsed) {
      const m = doc.toJS();
      for (const [path, n] of nodes(m.spec.versions[0].schema.openAPIV3Schema, m.spec.names.kind)) {
        const where = `${path}: ${JSON.stringify(n).slice(0, 120)}`;
        if (n['x-kubernetes-int-or-string']) {
          expect(n.type, where).toBeUndefined();
          expect(n.anyOf, where).toEqual([{ type: 'integer' }, { type: 'string' }]);
        } else {
          expect(['object', 'array', 'string', 'integer', 'number', 'boolean'], where).toContain(n.type);
          expect(n.anyOf, where).toBeUndefined();
        }
        for (const banned of [
          '$ref',
          '$defs',
          '$schema',
          'oneOf',
          'allOf',
          'not',
          'const',
          'propertyNames',
          'enum',
        ]) {
          expect(n, where).not.toHaveProperty(banned);
        }
        expect(
          n.additionalProperties === undefined || typeof n.additionalProperties === 'object',
          where,
        ).toBe(true);
        expect(n.properties !== undefined && n.additionalProperties !== undefined, where).toBe(false);
        if (n.type === 'array') expect(n.items, where).toBeDefined();
        for (const r of (n.required ?? []) as string[])
          expect(Object.keys(n.properties ?? {}), where).toContain(r);
      }
    }
  });

  it('keeps every spec field the zod schema has, at every depth', () => {
    const ippool = spec(byKind.get('IPPool')!);
    expect(Object.keys(ippool.properties!).sort()).toEqual(
      [
        'allowedUses',
        'assignmentMode',
        'blockSize',
        'cidr',
        'disableBGPExport',
        'disabled',
        'ipip',
        'ipipMode',
        'namespaceSelector',
        'nat-outgoing',
        'natOutgoing',
        'nodeSelector',
        'vxlanMode',
      ].sort(),
    );
    expect(ippool.required).toEqual(['cidr']);
    const rule = spec(byKind.get('GlobalNetworkPolicy')!).properties!.ingress!.items!;
    expect(rule.required).toEqual(['action']);
    expect(rule.properties!.protocol).toEqual({
      anyOf: [{ type: 'integer' }, { type: 'string' }],
      'x-kubernetes-int-or-string': true,
    });
    expect(rule.properties!.ipVersion).toEqual({ type: 'integer' });
    expect(rule.properties!.destination!.properties!.ports!.items!['x-kubernetes-int-or-string']).toBe(true);
    expect(rule.properties!.metadata!.properties!.annotations).toEqual({
      type: 'object',
      additionalProperties: { type: 'string' },
    });
    const staged = spec(byKind.get('StagedGlobalNetworkPolicy')!);
    expect(staged.properties!.stagedAction).toEqual({ type: 'string' });
    expect(Object.keys(staged.properties!).filter((k) => k !== 'stagedAction')).toEqual(
      Object.keys(spec(byKind.get('GlobalNetworkPolicy')!).properties!),
    );
    const kcc = byKind.get('KubeControllersConfiguration')!.spec.versions[0].schema.openAPIV3Schema;
    expect(kcc.properties!.status!.properties!.runningConfig).toEqual(kcc.properties!.spec);
  });

  it('writes the IPAM kinds as upstream’s Go types have them', () => {
    const block = spec(byKind.get('IPAMBlock')!);
    expect(block.required).toEqual(['allocations', 'attributes', 'cidr', 'strictAffinity', 'unallocated']);
    expect(block.properties!.allocations).toEqual({
      type: 'array',
      items: { type: 'integer', nullable: true },
    });
    expect(block.properties!.affinityClaimTime).toEqual({ type: 'string', format: 'date-time' });
    expect(Object.keys(block.properties!.attributes!.items!.properties!).sort()).toEqual([
      'alternate',
      'handle_id',
      'secondary',
    ]);
    expect(block.properties!.sequenceNumberForAllocation).toEqual({
      type: 'object',
      additionalProperties: { type: 'integer', format: 'int64' },
    });
    const affinity = spec(byKind.get('BlockAffinity')!);
    expect(affinity.properties!.deleted).toEqual({ type: 'string' });
    expect(affinity.required).toEqual(['cidr', 'deleted', 'node', 'state']);
    expect(spec(byKind.get('IPAMHandle')!).required).toEqual(['block', 'handleID']);
    expect(spec(byKind.get('IPAMConfig')!).required).toEqual(['autoAllocateBlocks', 'strictAffinity']);
  });
});

describe('toStructuralSchema', () => {
  const conv = (s: z.ZodType) =>
    toStructuralSchema(z.toJSONSchema(s, { io: 'input' }) as Record<string, unknown>);

  it('turns a number-or-string into int-or-string, literals into their type, nullables into nullable', () => {
    expect(conv(z.union([z.number(), z.string()]))['x-kubernetes-int-or-string']).toBe(true);
    expect(conv(z.union([z.literal(4), z.literal(6)]))).toEqual({ type: 'integer' });
    expect(conv(z.union([z.literal(0.5), z.literal(1.5)]))).toEqual({ type: 'number' });
    expect(conv(z.union([z.number().int(), z.number()]))).toEqual({ type: 'number' });
    expect(conv(z.number().int().nullable())).toEqual({ type: 'integer', nullable: true });
    expect(conv(z.enum(['a', 'b']))).toEqual({ type: 'string' });
  });

  it('turns records into maps, drops value rules and additionalProperties: false', () => {
    expect(conv(z.record(z.string(), z.number().int()))).toEqual({
      type: 'object',
      additionalProperties: { type: 'integer' },
    });
    expect(
      conv(z.strictObject({ a: z.string().min(3).regex(/x/), b: z.number().max(3).optional() })),
    ).toEqual({
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'number' } },
      required: ['a'],
    });
    expect(conv(z.strictObject({}))).toEqual({ type: 'object' });
  });

  it('refuses what has no structural form, naming where', () => {
    expect(() => conv(z.unknown())).toThrow(/at \$/);
    expect(() =>
      conv(z.strictObject({ x: z.union([z.string(), z.strictObject({ a: z.string() })]) })),
    ).toThrow(/at \$\.x/);
    expect(() => conv(z.union([z.boolean(), z.string()]))).toThrow(/boolean, string/);
    expect(() => toStructuralSchema({ $ref: '#/$defs/a' })).toThrow(/\$ref/);
  });
});

describe('upstream-shaped objects', () => {
  it('cover every kind once', () => {
    expect(
      crdExamples()
        .map((e) => e.kind)
        .sort(),
    ).toEqual(Object.keys(UPSTREAM).sort());
  });

  it('are kept whole by the CRDs', () => {
    for (const ex of crdExamples()) {
      const { problems, stored } = admitObject(schemaOf(ex.kind), ex);
      expect(problems, ex.kind).toEqual([]);
      expect(stored, ex.kind).toEqual(ex);
    }
  });

  it('are valid resources where @calico-ts/api models the kind', () => {
    for (const ex of crdExamples()) {
      if (!isKind(ex.kind)) continue;
      const r = validateResource({ ...ex, apiVersion: 'projectcalico.org/v3' });
      expect(r.ok ? [] : r.errors, ex.kind).toEqual([]);
    }
  });
});

describe('admitObject', () => {
  const admitted = (o: CrdObject): Admission => admitObject(schemaOf(o.kind), o);
  const probe = (name: string) => crdProbes().find((p) => p.metadata.name === name)!;
  const summary = (a: Admission) => a.problems.map((p) => `${p.kind} ${p.path}`);

  it('prunes unknown fields and nulls in optional fields, and keeps the rest', () => {
    const unknown = admitted(probe('probe-unknown-field'));
    expect(summary(unknown)).toEqual(['pruned spec.futureField', 'pruned spec.ipip.extra']);
    expect((unknown.stored as CrdObject).spec).toEqual({
      cidr: '198.19.2.0/24',
      ipip: { enabled: true, mode: 'always' },
    });
    const nullOptional = admitted(probe('probe-null-optional'));
    expect(summary(nullOptional)).toEqual(['pruned spec.sequenceNumberForAllocation']);
    expect((nullOptional.stored as CrdObject).spec).not.toHaveProperty('sequenceNumberForAllocation');
  });

  it('refuses wrong types, missing required fields and nulls it may not keep', () => {
    expect(summary(admitted(probe('probe-null-required')))).toEqual(['rejected spec.attributes']);
    expect(summary(admitted(probe('probe-wrong-type')))).toEqual(['rejected spec.blockSize']);
    expect(summary(admitted(probe('probe-missing-required')))).toEqual(['rejected spec.cidr']);
    expect(summary(admitted(probe('probe-null-item')))).toEqual(['rejected spec.nets[1]']);
    expect(summary(admitted(probe('probe-fractional-port')))).toEqual([
      'rejected spec.ingress[0].destination.ports[0]',
    ]);
    expect(summary(admitted(probe('probe-boolean-deleted')))).toEqual(['rejected spec.deleted']);
  });

  it('passes the root metadata through and names odd keys in brackets', () => {
    const a = admitObject(
      { type: 'object', properties: { spec: { type: 'object', additionalProperties: { type: 'string' } } } },
      { metadata: { name: 'x', anything: 1 }, spec: { 'a/b': 3 } },
    );
    expect(a.problems).toEqual([
      { kind: 'rejected', path: 'spec["a/b"]', detail: 'integer where string belongs' },
    ]);
  });
});
