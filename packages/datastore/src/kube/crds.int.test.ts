/**
 * The CRDs in deploy/crds on a real kube-apiserver, installed the way a user installs them
 * (`kubectl apply -f deploy/crds/`): every one is accepted as structural and established with the
 * schema we wrote; one object of each kind in the shape upstream Calico stores it is created with
 * strict field validation and read back by kubectl unchanged (nothing pruned, nothing refused);
 * and objects a CRD must change or refuse fare exactly as `admitObject` predicts. Needs the
 * kube-apiserver binary scripts/setup.sh builds, etcd, openssl and kubectl.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import {
  admitObject,
  CRD_EXAMPLE_NAMESPACE,
  CRD_GROUP,
  type CrdObject,
  crdExamples,
  crdManifests,
  crdProbes,
} from '@calico-ts/api/crds';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  findKubectl,
  type KubeApiServer,
  missingKubePrerequisites,
  startKubeApiServer,
} from '../testing/index.js';

const CRD_DIR = join(import.meta.dirname, '../../../../deploy/crds');

const missing = missingKubePrerequisites({ files: [[CRD_DIR, 'the CRDs: run pnpm crds']] });
if (missing.length > 0) {
  describe('Calico CRDs on kube-apiserver', () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const manifests = crdManifests();
const byKind = new Map(manifests.map((m) => [m.spec.names.kind, m]));
const schemaOf = (kind: string) => byKind.get(kind)!.spec.versions[0].schema.openAPIV3Schema;

describe.skipIf(missing.length > 0)('Calico CRDs on kube-apiserver', () => {
  let server: KubeApiServer;

  /** kubectl as the admin, `input` on stdin; never throws, the caller looks at the result. */
  function kubectl(args: string[], input?: string): Promise<Run> {
    return new Promise((resolve) => {
      const child = execFile(
        findKubectl()!,
        ['--kubeconfig', server.kubeconfigPath, ...args],
        { maxBuffer: 64 * 1024 * 1024 },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
          resolve({ code, stdout, stderr: stderr || (error && code === 1 ? error.message : '') });
        },
      );
      child.stdin?.end(input ?? '');
    });
  }
  async function ok(args: string[], input?: string): Promise<string> {
    const r = await kubectl(args, input);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
    return r.stdout;
  }

  /** `kubectl get` of the object's own kind and name, as JSON. */
  async function readBack(o: CrdObject): Promise<CrdObject> {
    const plural = byKind.get(o.kind)!.spec.names.plural;
    const ns = o.metadata.namespace ? ['-n', o.metadata.namespace] : [];
    return JSON.parse(await ok(['get', `${plural}.${CRD_GROUP}`, o.metadata.name, ...ns, '-o', 'json']));
  }

  beforeAll(async () => {
    server = await startKubeApiServer();
    await ok(['apply', '-f', CRD_DIR]);
    await ok(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
    await ok(['create', 'namespace', CRD_EXAMPLE_NAMESPACE]);
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('installs every CRD as structural and established, with the schema as written', async () => {
    const list = JSON.parse(await ok(['get', 'crd', '-o', 'json'])) as {
      items: Array<{
        metadata: { name: string };
        spec: { versions: Array<{ schema: { openAPIV3Schema: unknown } }> };
        status: { conditions?: Array<{ type: string; status: string; message?: string }> };
      }>;
    };
    const installed = new Map(list.items.map((c) => [c.metadata.name, c]));
    expect([...installed.keys()].sort()).toEqual(manifests.map((m) => m.metadata.name).sort());
    for (const m of manifests) {
      const crd = installed.get(m.metadata.name)!;
      const conditions = Object.fromEntries((crd.status.conditions ?? []).map((c) => [c.type, c.status]));
      expect(conditions, m.metadata.name).toMatchObject({ Established: 'True', NamesAccepted: 'True' });
      expect(conditions.NonStructuralSchema, m.metadata.name).toBeUndefined();
      expect(crd.spec.versions[0]!.schema.openAPIV3Schema, m.metadata.name).toEqual(
        m.spec.versions[0].schema.openAPIV3Schema,
      );
    }
  });

  it('keeps every upstream-shaped object whole: created with strict validation, read back unchanged', async () => {
    const examples = crdExamples();
    const problems: string[] = [];
    await Promise.all(
      examples.map(async (ex) => {
        const created = await kubectl(['create', '--validate=strict', '-f', '-'], JSON.stringify(ex));
        if (created.code !== 0) {
          problems.push(`${ex.kind}: refused: ${created.stderr.trim()}`);
          return;
        }
        const got = await readBack(ex);
        const same = (what: string, read: unknown, sent: unknown) => {
          const [r, s] = [JSON.stringify(sortKeys(read)), JSON.stringify(sortKeys(sent))];
          if (r !== s) problems.push(`${ex.kind} ${what} changed:\n  sent ${s}\n  read ${r}`);
        };
        same('apiVersion', got.apiVersion, ex.apiVersion);
        same('spec', got.spec, ex.spec);
        same('status', got.status, ex.status);
        same('labels', got.metadata.labels, ex.metadata.labels);
        same('annotations', got.metadata.annotations, ex.metadata.annotations);
      }),
    );
    expect(problems).toEqual([]);
    expect(examples.map((e) => e.kind).sort()).toEqual([...byKind.keys()].sort());
  });

  it('reads an IPAMBlock back with its null allocations and a BlockAffinity with deleted "false"', async () => {
    const block = await readBack(crdExamples().find((e) => e.kind === 'IPAMBlock')!);
    const allocations = block.spec.allocations as Array<number | null>;
    expect(allocations.slice(0, 4)).toEqual([0, null, 1, null]);
    expect(allocations).toHaveLength(64);
    expect(block.spec.sequenceNumber).toBe(1_767_348_003_000_000_000);
    const affinity = await readBack(crdExamples().find((e) => e.kind === 'BlockAffinity')!);
    expect(affinity.spec.deleted).toBe('false');
  });

  it('prunes and refuses exactly as admitObject predicts', async () => {
    for (const probe of crdProbes()) {
      const { stored, problems } = admitObject(schemaOf(probe.kind), probe);
      const rejected = problems.filter((p) => p.kind === 'rejected');
      // As a client that asks for no field validation (client-go's default) writes it.
      const created = await kubectl(['create', '--validate=false', '-f', '-'], JSON.stringify(probe));
      const name = `${probe.kind} ${probe.metadata.name}`;
      if (rejected.length > 0) {
        expect(created.code, `${name} should be refused`).not.toBe(0);
        for (const p of rejected) expect(created.stderr, name).toContain(p.path);
      } else {
        expect(created.stderr, name).toBe('');
        expect(sortKeys((await readBack(probe)).spec), name).toEqual(sortKeys((stored as CrdObject).spec));
        expect(problems.length, `${name} should lose something`).toBeGreaterThan(0);
      }
    }
  });

  it('refuses an unknown field under strict validation, naming it', async () => {
    const probe = crdProbes().find((p) => p.metadata.name === 'probe-unknown-field')!;
    const r = await kubectl(
      ['create', '--validate=strict', '-f', '-'],
      JSON.stringify({ ...probe, metadata: { name: 'probe-unknown-field-strict' } }),
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('unknown field "spec.futureField"');
  });
});

/** A copy with object keys in order, so two JSON texts compare by content. */
function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
    );
  }
  return v;
}
