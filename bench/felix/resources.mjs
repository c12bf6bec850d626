// The datastore-shaped resources of Felix's benches (felix.bench.mjs, felix-js.bench.mjs): E local
// WorkloadEndpoints (one IPv4 address each, in 20 namespaces whose profiles apply a namespace
// label), P GlobalNetworkPolicies of R rules each (four rule shapes in turn: selector + ports,
// nets + ports, deny nets, selector), one IP pool and one network set; and the variants the
// change bench toggles (a policy or profile with one rule more, a pod's role, the set's nets, a
// second pool). Pure: the same arguments give the same resources.

export const HOST = 'bench-node';
const V3 = 'projectcalico.org/v3';
const APPS = 50;
const ROLES = 10;
const NAMESPACES = 20;

/** The resource makers for E endpoints, P policies and R rules per policy. */
export function benchResources(E, P, R) {
  /** A local pod: `cali` + 11 hex characters (the 15-character limit), one IPv4 address. */
  function workload(i, role = `r${i % ROLES}`) {
    const ns = `ns-${i % NAMESPACES}`;
    const name = `${HOST}-k8s-pod--${i}-eth0`;
    return {
      apiVersion: V3,
      kind: 'WorkloadEndpoint',
      metadata: {
        name,
        namespace: ns,
        labels: {
          app: `app-${i % APPS}`,
          role,
          env: i % 3 === 0 ? 'prod' : 'staging',
          'projectcalico.org/namespace': ns,
          'projectcalico.org/orchestrator': 'k8s',
        },
      },
      spec: {
        node: HOST,
        orchestrator: 'k8s',
        pod: `pod-${i}`,
        endpoint: 'eth0',
        ipNetworks: [`10.65.${i >> 8}.${i & 0xff}/32`],
        interfaceName: `cali${i.toString(16).padStart(11, '0')}`,
        profiles: [`kns.${ns}`],
      },
    };
  }

  function nsProfile(k, extraRule = false) {
    const ingress = [{ action: 'Allow' }];
    if (extraRule) ingress.unshift({ action: 'Deny', protocol: 'TCP', destination: { ports: [7777] } });
    return {
      apiVersion: V3,
      kind: 'Profile',
      metadata: { name: `kns.ns-${k}` },
      spec: {
        labelsToApply: { 'pcns.projectcalico.org/name': `ns-${k}` },
        ingress,
        egress: [{ action: 'Allow' }],
      },
    };
  }

  /** A network set the `role == 'r3'` rules' IP sets include; its nets are what changes. */
  function netSet(variant) {
    return {
      apiVersion: V3,
      kind: 'GlobalNetworkSet',
      metadata: { name: 'external-r3', labels: { role: 'r3' } },
      spec: { nets: [`198.18.200.${variant & 0xff}/32`, '198.18.201.0/24'] },
    };
  }

  function extraPool() {
    return {
      apiVersion: V3,
      kind: 'IPPool',
      metadata: { name: 'extra-pool' },
      spec: { cidr: '10.66.0.0/16', natOutgoing: true },
    };
  }

  /** Rule k of a policy p: four shapes in turn (selector + ports, nets + ports, deny nets, selector). */
  function rule(p, k) {
    switch (k % 4) {
      case 0:
        return {
          action: 'Allow',
          protocol: 'TCP',
          source: { selector: `role == 'r${(p + k) % ROLES}'` },
          destination: { ports: [80 + (k % 50), `${8000 + k}:${8010 + k}`] },
        };
      case 1:
        return {
          action: 'Allow',
          protocol: 'UDP',
          destination: { nets: [`10.${(p % 200) + 1}.${k}.0/24`], ports: [53, 5353] },
        };
      case 2:
        return { action: 'Deny', source: { nets: [`198.18.${p & 0xff}.${k}/32`, `198.19.${k}.0/24`] } };
      default:
        return {
          action: 'Allow',
          protocol: 'TCP',
          destination: { selector: `app == 'app-${(p + k) % APPS}'`, ports: [443] },
        };
    }
  }

  /** Policy p applies to the endpoints of one app (E / APPS of them); R rules, half each way. */
  function policy(p, extraRule = false) {
    const half = R >> 1;
    const ingress = Array.from({ length: half }, (_, k) => rule(p, 2 * k));
    const egress = Array.from({ length: R - half }, (_, k) => rule(p, 2 * k + 1));
    if (extraRule) ingress.push({ action: 'Allow', protocol: 'TCP', destination: { ports: [9999] } });
    return {
      apiVersion: V3,
      kind: 'GlobalNetworkPolicy',
      metadata: { name: `default.gnp-${String(p).padStart(4, '0')}` },
      spec: {
        tier: 'default',
        order: 100 + p,
        selector: `app == 'app-${p % APPS}' && env in {'prod', 'staging'}`,
        types: ['Ingress', 'Egress'],
        ingress,
        egress,
      },
    };
  }

  function resources() {
    const out = [
      {
        apiVersion: V3,
        kind: 'IPPool',
        metadata: { name: 'default-ipv4-ippool' },
        spec: { cidr: '10.65.0.0/16', natOutgoing: true },
      },
    ];
    for (let k = 0; k < NAMESPACES; k++) out.push(nsProfile(k));
    for (let i = 0; i < E; i++) out.push(workload(i));
    for (let p = 0; p < P; p++) out.push(policy(p));
    out.push(netSet(0));
    return out;
  }

  const set = (resource) => ({ kind: 'set', resource });
  const del = (resource) => ({ kind: 'delete', resource });

  /**
   * The kinds of change, each a pair of batches (do, undo) for change number j, so that the state
   * returns to where it was and every change is measured on the same ruleset.
   */
  const changeKinds = {
    'policy: one rule added / removed': (j) => {
      const p = (j * 37 + 11) % P;
      return [[set(policy(p, true))], [set(policy(p))]];
    },
    'profile: one rule added / removed': (j) => {
      const k = j % NAMESPACES;
      return [[set(nsProfile(k, true))], [set(nsProfile(k))]];
    },
    'pod added / removed': (j) => {
      const w = workload(E + (j % 200));
      return [[set(w)], [del(w)]];
    },
    "label: pod moves into other rules' IP sets": (j) => {
      const i = (j * 13 + 5) % E;
      return [[set(workload(i, `r${(i + 1) % ROLES}`))], [set(workload(i))]];
    },
    'IP set member (network set nets)': (j) => [[set(netSet(j + 1))], [set(netSet(0))]],
    'IP pool added / removed': () => [[set(extraPool())], [del(extraPool())]],
  };

  return { workload, nsProfile, netSet, extraPool, policy, resources, changeKinds };
}
