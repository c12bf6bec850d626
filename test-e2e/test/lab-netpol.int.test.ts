/**
 * Cases of Kubernetes' own network-policy e2e suite (test/e2e/network/netpol: namespaces x, y, z,
 * pods a, b, c in each, a TCP probe from every pod to every other on port 80), driven as a user
 * drives them: real `networking.k8s.io/v1` objects applied with `lab kubectl`, real Pods and
 * Namespaces made by `lab ns create` / `lab pod create`, labels changed with `lab kubectl label`.
 * On each datastore: on etcd kube-controllers turns them into Calico policy, Profiles and endpoint
 * labels; on the Kubernetes datastore Calico reads them as they are. Each case compares the whole
 * 9×9 matrix with the one the case expects, then deletes its policy and sees the full matrix again.
 *
 * Own lab name and state directory; `lab down` in afterAll, also when a test failed.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATASTORES, LabDriver, missingPrerequisites } from './lab-driver.js';

const missing = missingPrerequisites();
const ci = process.env.CI === 'true';

if (missing.length > 0) {
  describe('lab network policy cases', () => {
    it.skipIf(!ci)('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

const NAMESPACES = ['x', 'y', 'z'] as const;
const PODS = ['a', 'b', 'c'] as const;
const NODE_OF: Record<string, string> = { a: 'n1', b: 'n2', c: 'n1' };

type Id = string; // `ns/pod`
const ns = (id: Id) => id.split('/')[0]!;

/** A NetworkPolicy object (what the suite's builders make). */
function netpol(namespace: string, name: string, spec: Record<string, unknown>) {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace }, spec };
}

describe.each(missing.length > 0 ? [] : DATASTORES)(
  'lab: Kubernetes network-policy cases, %s',
  (datastore) => {
    const name = `e2n${datastore === 'kubernetes' ? 'k' : ''}${Math.random().toString(16).slice(2, 6)}`;
    let dir: string;
    let lab: LabDriver;

    /** Applies `objects` with `lab kubectl`, checks the matrix, deletes them, checks it is full again. */
    const scenario = async (
      file: string,
      objects: object[],
      allowed: (from: Id, to: Id) => boolean,
      between?: () => Promise<void>,
      afterBetween?: (from: Id, to: Id) => boolean,
    ) => {
      await lab.applyYaml(
        'kubectl',
        dir,
        file,
        JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
      );
      expect(await lab.reachabilityMatches(allowed), `${file}: with the policy`).toEqual([]);
      if (between && afterBetween) {
        await between();
        expect(await lab.reachabilityMatches(afterBetween), `${file}: after the update`).toEqual([]);
      }
      await lab.ok('kubectl', 'delete', '-f', join(dir, `${file}.yaml`));
      expect(await lab.reachabilityMatches(() => true), `${file}: after deleting it`).toEqual([]);
    };

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'calico-e2e-netpol-'));
      lab = new LabDriver(name, join(dir, 'state'));
      const up = await lab.run('up', '--nodes', '2', '--mode', 'bgp', '--datastore', datastore);
      expect(up.code, up.stdout + up.stderr).toBe(0);
      for (const n of NAMESPACES) {
        await lab.ok('ns', 'create', n, '--labels', `ns=${n}`);
        for (const p of PODS)
          await lab.ok('pod', 'create', `${n}/${p}`, '--node', NODE_OF[p]!, '-l', `pod=${p}`);
      }
    }, 240_000);

    afterAll(async () => {
      if (dir && existsSync(join(dir, 'state', 'state.json'))) {
        const down = await lab.run('down');
        if (down.code !== 0) console.log(down.stdout + down.stderr);
      }
      if (dir) await rm(dir, { recursive: true, force: true });
      if (process.env.CALICO_E2E_VERBOSE === '1') console.log(lab?.log.join('\n'));
    }, 60_000);

    it('with no policy every pod reaches every other', async () => {
      expect(await lab.reachabilityMatches(() => true)).toEqual([]);
    }, 60_000);

    it("should support a 'default-deny-ingress' policy", async () => {
      await scenario(
        'deny-ingress',
        [netpol('x', 'deny-ingress', { podSelector: {}, policyTypes: ['Ingress'] })],
        (_from, to) => ns(to) !== 'x',
      );
    }, 120_000);

    it('should enforce policy to allow traffic only from a different namespace, based on NamespaceSelector', async () => {
      await scenario(
        'from-ns-y',
        [
          netpol('x', 'allow-ns-y', {
            podSelector: { matchLabels: { pod: 'a' } },
            ingress: [{ from: [{ namespaceSelector: { matchLabels: { ns: 'y' } } }] }],
          }),
        ],
        (from, to) => to !== 'x/a' || ns(from) === 'y',
      );
    }, 120_000);

    it('should enforce policy based on PodSelector with MatchExpressions, and the policy updated', async () => {
      const policy = (p: string) =>
        netpol('x', 'allow-pod', {
          podSelector: { matchLabels: { pod: 'a' } },
          ingress: [
            { from: [{ podSelector: { matchExpressions: [{ key: 'pod', operator: 'In', values: [p] }] } }] },
          ],
        });
      await scenario(
        'match-expressions',
        [policy('b')],
        (from, to) => to !== 'x/a' || from === 'x/b',
        () =>
          lab
            .applyYaml('kubectl', dir, 'match-expressions-updated', JSON.stringify(policy('c')))
            .then(() => {}),
        (from, to) => to !== 'x/a' || from === 'x/c',
      );
    }, 150_000);

    it('should allow ingress access from updated pod', async () => {
      await scenario(
        'updated-pod',
        [
          netpol('x', 'allow-updated-pod', {
            podSelector: { matchLabels: { pod: 'a' } },
            ingress: [{ from: [{ podSelector: { matchLabels: { pod2: 'updated' } } }] }],
          }),
        ],
        (_from, to) => to !== 'x/a',
        () => lab.ok('kubectl', 'label', 'pod', '-n', 'x', 'b', 'pod2=updated').then(() => {}),
        (from, to) => to !== 'x/a' || from === 'x/b',
      );
      await lab.ok('kubectl', 'label', 'pod', '-n', 'x', 'b', 'pod2-');
    }, 150_000);

    it('should allow ingress access from updated namespace', async () => {
      await scenario(
        'updated-ns',
        [
          netpol('x', 'allow-updated-ns', {
            podSelector: { matchLabels: { pod: 'a' } },
            ingress: [{ from: [{ namespaceSelector: { matchLabels: { ns2: 'updated' } } }] }],
          }),
        ],
        (_from, to) => to !== 'x/a',
        () => lab.ok('kubectl', 'label', 'namespace', 'y', 'ns2=updated').then(() => {}),
        (from, to) => to !== 'x/a' || ns(from) === 'y',
      );
      await lab.ok('kubectl', 'label', 'namespace', 'y', 'ns2-');
    }, 150_000);

    it('should enforce egress policy allowing traffic to a server in a different namespace based on PodSelector and NamespaceSelector', async () => {
      await scenario(
        'egress-to-y-b',
        [
          netpol('x', 'allow-to-y-b', {
            podSelector: { matchLabels: { pod: 'a' } },
            policyTypes: ['Egress'],
            egress: [
              {
                to: [
                  {
                    namespaceSelector: { matchLabels: { ns: 'y' } },
                    podSelector: { matchLabels: { pod: 'b' } },
                  },
                ],
                ports: [{ port: 80, protocol: 'TCP' }],
              },
            ],
          }),
        ],
        (from, to) => from !== 'x/a' || to === 'y/b',
      );
    }, 120_000);

    it('should enforce multiple ingress policies with ingress allow-all policy taking precedence', async () => {
      await scenario(
        'deny-a',
        [netpol('x', 'deny-a', { podSelector: { matchLabels: { pod: 'a' } }, policyTypes: ['Ingress'] })],
        (_from, to) => to !== 'x/a',
        () =>
          lab
            .applyYaml(
              'kubectl',
              dir,
              'allow-all-a',
              JSON.stringify(
                netpol('x', 'allow-all-a', { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{}] }),
              ),
            )
            .then(() => {}),
        () => true,
      );
      await lab.ok('kubectl', 'delete', 'networkpolicy', '-n', 'x', 'allow-all-a');
    }, 150_000);
  },
);
