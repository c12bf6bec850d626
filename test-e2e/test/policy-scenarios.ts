/**
 * Steps the datastore-parametrised lab scenarios share (lab-bgp, lab-vxlan): policy applied the way
 * a user applies it (calicoctl, or kubectl on both datastores) changes what `lab connectivity`
 * shows, and deleting it brings everything back; on the Kubernetes datastore, what calicoctl wrote
 * is what upstream stores; on etcd, the API server and Calico share the etcd by prefix.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { LabDriver } from './lab-driver.js';

const everyone = () => true;

/**
 * A Calico NetworkPolicy (`lab calicoctl apply`) in `namespace` lets only `allowFrom` in to the pods
 * `selector` picks: afterwards exactly the pairs `protectedPod(to) ⇒ allowedSource(from)` connect;
 * `lab calicoctl delete` restores the full matrix.
 */
export async function calicoPolicyScenario(
  lab: LabDriver,
  dir: string,
  o: {
    namespace: string;
    selector: string;
    allowFrom: string;
    pods: readonly string[];
    protectedPod: (id: string) => boolean;
    allowedSource: (id: string) => boolean;
  },
): Promise<void> {
  expect(await lab.reachabilityMatches(everyone), 'before the policy').toEqual([]);
  const yaml = `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: e2e-only-peers
  namespace: ${o.namespace}
spec:
  selector: ${JSON.stringify(o.selector)}
  types:
  - Ingress
  ingress:
  - action: Allow
    source:
      selector: ${JSON.stringify(o.allowFrom)}
`;
  await lab.applyYaml('calicoctl', dir, 'e2e-only-peers', yaml);
  const allowed = (from: string, to: string) => !o.protectedPod(to) || o.allowedSource(from);
  // The policy must block something, or the check below proves nothing.
  expect(o.pods.some((from) => o.pods.some((to) => from !== to && !allowed(from, to)))).toBe(true);
  expect(await lab.reachabilityMatches(allowed), 'with the Calico policy').toEqual([]);
  await lab.ok('calicoctl', 'delete', 'networkpolicy', 'e2e-only-peers', '-n', o.namespace);
  expect(await lab.reachabilityMatches(everyone), 'after deleting the policy').toEqual([]);
}

/**
 * A Kubernetes NetworkPolicy (`lab kubectl apply`) lets only pods of namespaces labelled
 * `fromNamespaceLabels` in to the pods `podLabels` picks in `namespace`. Calico shows it as
 * `knp.default.<name>`; Felix enforces it; `lab kubectl delete` restores the full matrix.
 */
export async function kubePolicyScenario(
  lab: LabDriver,
  dir: string,
  o: {
    namespace: string;
    podLabels: Record<string, string>;
    fromNamespaceLabels: Record<string, string>;
    pods: readonly string[];
    protectedPod: (id: string) => boolean;
    allowedSource: (id: string) => boolean;
  },
): Promise<void> {
  expect(await lab.reachabilityMatches(everyone), 'before the policy').toEqual([]);
  const policy = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'e2e-from-front', namespace: o.namespace },
    spec: {
      podSelector: { matchLabels: o.podLabels },
      policyTypes: ['Ingress'],
      ingress: [{ from: [{ namespaceSelector: { matchLabels: o.fromNamespaceLabels } }] }],
    },
  };
  await lab.applyYaml('kubectl', dir, 'e2e-from-front', JSON.stringify(policy));
  // On etcd kube-controllers' policy controller writes it: a moment later.
  let names: string[] = [];
  for (const end = Date.now() + 15_000; ; ) {
    const calico = JSON.parse(
      (await lab.ok('calicoctl', 'get', 'networkpolicy', '-n', o.namespace, '-o', 'json')).stdout,
    ) as { items: { metadata: { name: string } }[] };
    names = calico.items.map((p) => p.metadata.name);
    if (names.includes('knp.default.e2e-from-front') || Date.now() > end) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  expect(names).toContain('knp.default.e2e-from-front');
  const allowed = (from: string, to: string) => !o.protectedPod(to) || o.allowedSource(from);
  expect(o.pods.some((from) => o.pods.some((to) => from !== to && !allowed(from, to)))).toBe(true);
  expect(await lab.reachabilityMatches(allowed), 'with the Kubernetes NetworkPolicy').toEqual([]);
  await lab.ok('kubectl', 'delete', 'networkpolicy', 'e2e-from-front', '-n', o.namespace);
  expect(await lab.reachabilityMatches(everyone), 'after deleting the policy').toEqual([]);
}

/**
 * An IPPool created with `lab calicoctl` is, read back with `lab kubectl`, a
 * crd.projectcalico.org/v1 IPPool with upstream's spec fields. Disabled and selecting no node, so
 * nothing in the lab uses it; deleted again afterwards.
 */
export async function kubeStoredIPPool(lab: LabDriver, dir: string): Promise<void> {
  await lab.applyYaml(
    'calicoctl',
    dir,
    'e2e-pool',
    `apiVersion: projectcalico.org/v3
kind: IPPool
metadata:
  name: e2e-stored-shape
spec:
  cidr: 198.18.64.0/24
  blockSize: 28
  ipipMode: Never
  vxlanMode: Never
  natOutgoing: true
  disabled: true
  nodeSelector: "!all()"
`,
    'create',
  );
  const r = await lab.ok('kubectl', 'get', 'ippools.crd.projectcalico.org', '-o', 'json');
  const list = JSON.parse(r.stdout) as {
    items: { apiVersion: string; kind: string; metadata: { name: string }; spec: Record<string, unknown> }[];
  };
  const pool = list.items.find((p) => p.metadata.name === 'e2e-stored-shape');
  expect(pool, r.stdout).toBeDefined();
  expect(pool).toMatchObject({
    apiVersion: 'crd.projectcalico.org/v1',
    kind: 'IPPool',
    spec: {
      cidr: '198.18.64.0/24',
      blockSize: 28,
      ipipMode: 'Never',
      vxlanMode: 'Never',
      natOutgoing: true,
      disabled: true,
      nodeSelector: '!all()',
    },
  });
  // calico-node's own default pool is there too, in the same shape.
  expect(list.items.find((p) => p.metadata.name === 'default-ipv4-ippool')?.spec).toMatchObject({
    cidr: '198.19.0.0/16',
    blockSize: 26,
  });
  await lab.ok('calicoctl', 'delete', 'ippool', 'e2e-stored-shape');
  const after = await lab.run('kubectl', 'get', 'ippools.crd.projectcalico.org', 'e2e-stored-shape');
  expect(after.code).not.toBe(0);
  expect(after.stderr).toContain('NotFound');
}

/**
 * On etcd the lab's API server shares the lab's etcd, as a cluster's own etcd would hold it: its
 * objects under /registry (the Namespaces and Pods the lab made), Calico's under /calico/ (the
 * Profiles kube-controllers derived from them), and neither under the other's prefix.
 */
export async function etcdKeepsBoth(lab: LabDriver): Promise<void> {
  const s = lab.state();
  const keys = (prefix: string) => {
    const r = spawnSync(
      'ip',
      [
        'netns',
        'exec',
        s.plan.etcdNetns,
        'etcdctl',
        `--endpoints=${s.plan.etcdUrl}`,
        'get',
        '--prefix',
        prefix,
        '--keys-only',
      ],
      { encoding: 'utf8', env: { ...process.env, ETCDCTL_API: '3' } },
    );
    expect(r.status, r.stderr).toBe(0);
    return r.stdout.split('\n').filter((l) => l !== '');
  };
  const registry = keys('/registry/');
  const calico = keys('/calico/');
  expect(registry).toEqual(
    expect.arrayContaining(['/registry/namespaces/team-a', '/registry/pods/team-a/web-1']),
  );
  expect(calico).toEqual(
    expect.arrayContaining(['/calico/resources/v3/projectcalico.org/profiles/kns.team-a']),
  );
  expect(
    registry.filter((k) => k.startsWith('/registry/') && k.includes('projectcalico.org/profiles')),
  ).toEqual([]);
  const r = await lab.ok('kubectl', 'get', 'pods', '-n', 'team-a', '-o', 'json');
  const pods = (
    JSON.parse(r.stdout) as {
      items: { metadata: { name: string }; status: { phase: string; podIP?: string } }[];
    }
  ).items;
  expect(pods.map((p) => [p.metadata.name, p.status.phase, p.status.podIP])).toEqual(
    s.pods
      .filter((p) => p.namespace === 'team-a')
      .map((p) => [p.name, 'Running', p.ip])
      .sort(),
  );
}

/**
 * An egress policy that allows only a Kubernetes Service (`destination.services`): before the
 * Service exists the selected pods reach nothing; with a Service whose EndpointSlice names one
 * pod, they reach exactly that pod; the others are untouched throughout. Deleting the policy
 * restores the full matrix.
 */
export async function serviceEgressScenario(
  lab: LabDriver,
  dir: string,
  o: {
    namespace: string;
    selector: string;
    isSelected: (id: string) => boolean;
    serviceNamespace: string;
    /** The pod (`ns/name`) the Service's EndpointSlice points at. */
    endpointPod: string;
  },
): Promise<void> {
  expect(await lab.reachabilityMatches(everyone), 'before the policy').toEqual([]);
  const policy = `apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: e2e-only-service
  namespace: ${o.namespace}
spec:
  selector: ${JSON.stringify(o.selector)}
  types:
  - Egress
  egress:
  - action: Allow
    destination:
      services:
        name: e2e-svc
        namespace: ${o.serviceNamespace}
`;
  await lab.applyYaml('calicoctl', dir, 'e2e-only-service', policy);
  const nothing = (from: string) => !o.isSelected(from);
  expect(
    await lab.reachabilityMatches((from) => nothing(from)),
    'policy naming a Service that does not exist',
  ).toEqual([]);
  const [ns, name] = o.endpointPod.split('/');
  const ip = lab.state().pods.find((p) => p.namespace === ns && p.name === name)?.ip;
  expect(ip, `address of ${o.endpointPod}`).toBeDefined();
  const objects = {
    apiVersion: 'v1',
    kind: 'List',
    items: [
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'e2e-svc', namespace: o.serviceNamespace },
        spec: { ports: [{ port: 80, protocol: 'TCP' }] },
      },
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
          name: 'e2e-svc-1',
          namespace: o.serviceNamespace,
          labels: { 'kubernetes.io/service-name': 'e2e-svc' },
        },
        addressType: 'IPv4',
        endpoints: [{ addresses: [ip] }],
        ports: [{ port: 80, protocol: 'TCP' }],
      },
    ],
  };
  await lab.applyYaml('kubectl', dir, 'e2e-svc', JSON.stringify(objects));
  expect(
    await lab.reachabilityMatches((from, to) => nothing(from) || to === o.endpointPod),
    'with the Service and its EndpointSlice',
  ).toEqual([]);
  await lab.ok('kubectl', 'delete', '-f', join(dir, 'e2e-svc.yaml'));
  await lab.ok('calicoctl', 'delete', 'networkpolicy', 'e2e-only-service', '-n', o.namespace);
  expect(await lab.reachabilityMatches(everyone), 'after deleting the policy').toEqual([]);
}
