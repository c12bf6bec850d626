/**
 * `calicoctl policy explain` through the real command line over an in-memory datastore: the text
 * a user reads, the JSON a script reads, and the error for each kind of bad input.
 */
import { describe, expect, it } from 'vitest';
import { harness } from '../testing-internal/harness.js';

const WORLD = `
apiVersion: projectcalico.org/v3
kind: Profile
metadata: {name: kns.shop}
spec:
  ingress: [{action: Allow}]
  egress: [{action: Allow}]
  labelsToApply: {pcns.projectcalico.org/name: shop}
---
apiVersion: projectcalico.org/v3
kind: Tier
metadata: {name: security}
spec: {order: 10, defaultAction: Deny}
---
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: node1-k8s-web-eth0, namespace: shop, labels: {app: web}}
spec: {node: node1, orchestrator: k8s, pod: web, endpoint: eth0, interfaceName: cali1, ipNetworks: [198.19.0.1/32], profiles: [kns.shop]}
---
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: node1-k8s-db-eth0, namespace: shop, labels: {app: db}}
spec: {node: node1, orchestrator: k8s, pod: db, endpoint: eth0, interfaceName: cali2, ipNetworks: [198.19.0.2/32], profiles: [kns.shop], ports: [{name: pg, protocol: TCP, port: 5432}]}
---
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: node1-k8s-pending-eth0, namespace: shop}
spec: {node: node1, orchestrator: k8s, pod: pending, endpoint: eth0, interfaceName: cali3, profiles: [kns.shop]}
---
apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: pass-shop}
spec:
  tier: security
  selector: app == 'db'
  types: [Ingress]
  ingress:
  - action: Pass
    source: {namespaceSelector: projectcalico.org/name == 'shop'}
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: db-in, namespace: shop}
spec:
  selector: app == 'db'
  ingress:
  - action: Allow
    protocol: TCP
    source: {selector: app == 'api'}
    destination: {ports: [pg]}
---
apiVersion: projectcalico.org/v3
kind: StagedNetworkPolicy
metadata: {name: db-in, namespace: shop}
spec:
  selector: app == 'db'
  ingress:
  - action: Allow
    protocol: TCP
    source: {selector: app == 'web'}
    destination: {ports: [pg]}
`;

async function world() {
  const h = harness();
  h.files['/world.yaml'] = WORLD;
  const applied = await h.run('apply -f /world.yaml');
  expect(applied).toMatchObject({ code: 0, stderr: '' });
  return h;
}

describe('calicoctl policy explain', () => {
  it('prints the verdict, each tier, policy and rule with its checks, and the staged verdict', async () => {
    const h = await world();
    const r = await h.run('policy explain --from shop/web --to shop/db --port 5432');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines.slice(0, 14)).toEqual([
      'tcp 198.19.0.1:32768 → 198.19.0.2:5432',
      '  from pod shop/web: WorkloadEndpoint shop/node1-k8s-web-eth0',
      '        labels: app=web, pcns.projectcalico.org/name=shop, projectcalico.org/namespace=shop, projectcalico.org/orchestrator=k8s',
      '        profiles: kns.shop',
      '  to   pod shop/db: WorkloadEndpoint shop/node1-k8s-db-eth0',
      '        labels: app=db, pcns.projectcalico.org/name=shop, projectcalico.org/namespace=shop, projectcalico.org/orchestrator=k8s',
      '        profiles: kns.shop',
      '',
      'verdict: DENIED',
      '  egress of shop/node1-k8s-web-eth0: allow (no policy applies; profile kns.shop egress[0] Allow)',
      '  ingress of shop/node1-k8s-db-eth0: deny (end of tier default: no policy allowed or passed (defaultAction Deny))',
      '  with the staged policies committed: ALLOWED',
      '',
      'egress of shop/node1-k8s-web-eth0 (the source)',
    ]);
    const ingress = r.stdout.slice(r.stdout.indexOf('ingress of shop/node1-k8s-db-eth0 (the destination)'));
    expect(ingress.split('\n').slice(0, 12)).toEqual([
      'ingress of shop/node1-k8s-db-eth0 (the destination)',
      '  tier security (order 10, defaultAction Deny)',
      '    GlobalNetworkPolicy pass-shop',
      "      applies: selector app == 'db' ✓ (labels of shop/node1-k8s-db-eth0)",
      "      ingress[0] Pass   match: source.namespaceSelector projectcalico.org/name == 'shop' ✓ (labels of namespace shop {projectcalico.org/name=shop})",
      '    → Pass by GlobalNetworkPolicy pass-shop ingress[0]',
      '  tier default (order 1000000, defaultAction Deny)',
      '    NetworkPolicy shop/db-in',
      "      applies: namespace shop ✓ (namespace shop); selector app == 'db' ✓ (labels of shop/node1-k8s-db-eth0)",
      "      ingress[0] Allow  no match: protocol TCP ✓ (tcp); source.selector app == 'api' ✗ (labels of shop/node1-k8s-web-eth0)",
      '    → Deny: end of tier, no policy decided (defaultAction Deny)',
      '  decided: deny (end of tier default: no policy allowed or passed (defaultAction Deny))',
    ]);
    expect(ingress).toContain(
      '  with the staged policies committed (StagedNetworkPolicy shop/db-in (Set)): allow\n',
    );
    expect(ingress).toContain(
      "        ingress[0] Allow  match: protocol TCP ✓ (tcp); source.selector app == 'web' ✓ (labels of shop/node1-k8s-web-eth0); source in the policy's namespace shop ✓ (namespace shop); destination.ports pg ✓ (port 5432; shop/node1-k8s-db-eth0 declares tcp pg=5432)\n",
    );
  });

  it('lists the policies that do not select an endpoint, with the check that failed, at most ten', async () => {
    const h = await world();
    const r = await h.run('policy explain --from shop/db --to shop/web --port 80');
    expect(r.stdout).toContain(
      '  not selecting this endpoint:\n' +
        "    NetworkPolicy shop/db-in: selector app == 'db' ✗ (labels of shop/node1-k8s-web-eth0)\n" +
        "    GlobalNetworkPolicy pass-shop: selector app == 'db' ✗ (labels of shop/node1-k8s-web-eth0)\n",
    );
    const many = Array.from(
      { length: 12 },
      (_, i) =>
        `apiVersion: projectcalico.org/v3\nkind: NetworkPolicy\nmetadata: {name: other-${i}, namespace: shop}\nspec: {selector: app == 'x', types: [Ingress]}\n`,
    ).join('---\n');
    h.files['/many.yaml'] = many;
    expect((await h.run('apply -f /many.yaml')).code).toBe(0);
    const listed = (await h.run('policy explain --from shop/db --to shop/web --port 80')).stdout;
    expect(listed).toContain('    … and 4 more (-o json lists them all)\n');
    const j = JSON.parse(
      (await h.run('policy explain --from shop/db --to shop/web --port 80 -o json')).stdout,
    );
    expect(j.ingress.notSelecting).toHaveLength(14);
  });

  it('-o json: the whole trace for a script, and addresses that are no endpoint', async () => {
    const h = await world();
    const r = await h.run(
      'policy explain --from-ip 192.0.2.9 --to shop/web --port 80 --protocol UDP --source-port 5353 -o json',
    );
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const j = JSON.parse(r.stdout);
    expect(j.flow).toEqual({
      srcIP: '192.0.2.9',
      dstIP: '198.19.0.1',
      protocol: 'udp',
      srcPort: 5353,
      dstPort: 80,
    });
    expect([j.from, j.to, j.allowed, j.stagedAllowed]).toEqual([
      'address 192.0.2.9',
      'pod shop/web',
      true,
      true,
    ]);
    expect(j.egress).toBeUndefined();
    expect(j.ingress.decision).toEqual({ kind: 'profile', profile: 'kns.shop', rule: 0 });
    const y = await h.run('policy explain --from shop/web --to shop/db --port 5432 -o yaml');
    expect(y.stdout).toContain('stagedAllowed: true\n');
  });

  it('names what was wrong in bad input', async () => {
    const h = await world();
    const cases: [string, string][] = [
      [
        '--from shop/nope --to shop/db --port 80',
        '--from: pod shop/nope not found (no WorkloadEndpoint in namespace shop for pod nope)',
      ],
      [
        '--from shop/pending --to shop/db --port 80',
        '--from: pod shop/pending has no IPv4 address (its WorkloadEndpoint lists none; is the pod running?)',
      ],
      [
        '--from shop/web --to shop/db --port 70000',
        "--port must be a port number from 1 to 65535, not '70000'",
      ],
      [
        '--from shop/web --to shop/db --port http',
        "--port must be a port number from 1 to 65535, not 'http'",
      ],
      ['--from shop/web --to shop/db --port 80 --protocol icmp', "--protocol must be tcp or udp, not 'icmp'"],
      ['--from web --to shop/db --port 80', "--from must be NAMESPACE/POD, not 'web'"],
      [
        '--from shop/web --from-ip 10.0.0.1 --to shop/db --port 80',
        'give exactly one of --from NAMESPACE/POD, --from-ip IP, --from-hep HOSTENDPOINT',
      ],
      [
        '--from shop/web --port 80',
        'give exactly one of --to NAMESPACE/POD, --to-ip IP, --to-hep HOSTENDPOINT',
      ],
      ['--from shop/web --to-ip 300.1.1.1 --port 80', "--to-ip must be an IP address, not '300.1.1.1'"],
      ['--from shop/web --to-ip fd00::1 --port 80', '--to-ip fd00::1: only IPv4 flows are explained'],
      ['--from shop/web --to-hep node9 --port 80', '--to-hep: HostEndpoint node9 not found'],
      [
        '--from shop/web --to shop/db --port 80 -o wide',
        "unrecognized output format 'wide': use text, yaml or json",
      ],
    ];
    for (const [args, message] of cases) {
      expect(await h.run(`policy explain ${args}`), args).toEqual({
        code: 1,
        stdout: '',
        stderr: `${message}\n`,
      });
    }
  });
});
