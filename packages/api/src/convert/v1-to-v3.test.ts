import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ApiError } from '../errors.js';
import { convertV1ToV3, isV1Document } from './index.js';

function convertYaml(text: string) {
  return convertV1ToV3(parse(text));
}

function conversionError(doc: unknown): ApiError {
  try {
    convertV1ToV3(doc);
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error('expected the conversion to fail');
}

describe('v1 ipPool', () => {
  it('converts the documented example exactly', () => {
    const { resources, notes } = convertYaml(`
apiVersion: v1
kind: ipPool
metadata: { cidr: 192.168.0.0/16 }
spec: { ipip: { enabled: true, mode: always }, nat-outgoing: true }
`);
    expect(resources).toEqual([
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'IPPool',
        metadata: { name: '192-168-0-0-16' },
        spec: {
          cidr: '192.168.0.0/16',
          vxlanMode: 'Never',
          ipipMode: 'Always',
          natOutgoing: true,
          blockSize: 26,
          nodeSelector: 'all()',
          allowedUses: ['Workload', 'Tunnel'],
          assignmentMode: 'Automatic',
        },
      },
    ]);
    expect(notes).toEqual([
      'converted v1 ipPool 192.168.0.0/16 to projectcalico.org/v3 IPPool 192-168-0-0-16',
    ]);
  });

  it.each([
    ['{ enabled: true }', 'Always'],
    ['{ enabled: true, mode: always }', 'Always'],
    ['{ enabled: true, mode: cross-subnet }', 'CrossSubnet'],
    ['{ enabled: false, mode: cross-subnet }', 'Never'],
    ['{}', 'Never'],
  ])('ipip %s → ipipMode %s', (ipip, mode) => {
    const { resources } = convertYaml(`
apiVersion: v1
kind: ipPool
metadata: { cidr: 10.1.0.0/16 }
spec: { ipip: ${ipip} }
`);
    expect((resources[0]!.spec as { ipipMode: string }).ipipMode).toBe(mode);
  });

  it('converts an IPv6 pool with a /122 block size and keeps disabled', () => {
    const { resources } = convertV1ToV3({
      apiVersion: 'v1',
      kind: 'ipPool',
      metadata: { cidr: '2001:0db8::/120' },
      spec: { disabled: true },
    });
    expect(resources[0]).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: '2001-db8---120' },
      spec: {
        cidr: '2001:db8::/120',
        vxlanMode: 'Never',
        ipipMode: 'Never',
        disabled: true,
        blockSize: 122,
        nodeSelector: 'all()',
        allowedUses: ['Workload', 'Tunnel'],
        assignmentMode: 'Automatic',
      },
    });
  });

  it('keeps host bits as upstream did, for validation to report', () => {
    const { resources } = convertV1ToV3({
      apiVersion: 'v1',
      kind: 'ipPool',
      metadata: { cidr: '10.0.0.1/24' },
    });
    expect(resources[0]!.metadata.name).toBe('10-0-0-1-24');
    expect((resources[0]!.spec as { cidr: string }).cidr).toBe('10.0.0.1/24');
  });

  it('names the field in errors', () => {
    const typo = conversionError({
      apiVersion: 'v1',
      kind: 'ipPool',
      metadata: { cidr: '10.0.0.0/8' },
      spec: { nat_outgoing: true },
    });
    expect(typo.code).toBe('conversion-failed');
    expect(typo.message).toMatch(/^cannot convert v1 ipPool: spec\.nat_outgoing: unknown field/);

    expect(conversionError({ apiVersion: 'v1', kind: 'ipPool', metadata: { cidr: 'ten' } }).message).toBe(
      'cannot convert v1 ipPool: metadata.cidr: "ten" is not a CIDR such as 192.168.0.0/16',
    );
    expect(conversionError({ apiVersion: 'v1', kind: 'ipPool', metadata: {} }).message).toBe(
      'cannot convert v1 ipPool: metadata.cidr: is required',
    );
    expect(
      conversionError({
        apiVersion: 'v1',
        kind: 'ipPool',
        metadata: { cidr: '10.0.0.0/8' },
        spec: { ipip: { enabled: true, mode: 'sometimes' } },
      }).message,
    ).toBe('cannot convert v1 ipPool: spec.ipip.mode: must be always or cross-subnet, got "sometimes"');
  });
});

describe('v1 policy', () => {
  const policyYaml = `
apiVersion: v1
kind: policy
metadata:
  name: nameyMcPolicyName
  annotations: { owner: netops }
spec:
  order: 1000
  selector: calico/k8s_ns == 'default' || thing == 'value'
  preDNAT: true
  types: [ingress]
  ingress:
  - action: allow
    ipVersion: 4
    protocol: icmp
    icmp: { type: 100, code: 200 }
    source:
      tag: tag1
      net: 192.168.0.129/25
      nets: [30.0.0.3/24, 40.0.0.4/24]
      notNet: 20.0.0.2/24
      notNets: [192.168.0.129/25, 30.0.0.3/24]
      selector: has(calico/k8s_ns) || bake == 'cake'
    destination:
      tag: kingindanorth
      net: 20.0.0.2/24
  - action: deny
    protocol: tcp
    source: { notTag: blocked }
    destination: { ports: [80, "8080:8090", "443", http], notPorts: ["22:22"] }
  egress:
  - action: next-tier
    source: { tag: tag3, selector: all() }
  - action: pass
    notProtocol: udp
`;

  it('converts tags, next-tier, net and nets the way upstream does', () => {
    const { resources, notes } = convertYaml(policyYaml);
    expect(resources).toEqual([
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'GlobalNetworkPolicy',
        metadata: {
          name: 'default.nameymcpolicyname-32df456f',
          labels: { 'projectcalico.org/tier': 'default' },
          annotations: { owner: 'netops' },
        },
        spec: {
          tier: 'default',
          order: 1000,
          ingress: [
            {
              action: 'Allow',
              ipVersion: 4,
              protocol: 'ICMP',
              icmp: { type: 100, code: 200 },
              source: {
                nets: ['30.0.0.0/24', '40.0.0.0/24', '192.168.0.128/25'],
                selector: "(has(projectcalico.org/namespace) || bake == 'cake') && tag1 == ''",
                notNets: ['192.168.0.128/25', '30.0.0.0/24', '20.0.0.0/24'],
              },
              destination: { nets: ['20.0.0.0/24'], selector: "kingindanorth == ''" },
            },
            {
              action: 'Deny',
              protocol: 'TCP',
              source: { notSelector: "blocked == ''" },
              destination: { ports: [80, '8080:8090', 443, 'http'], notPorts: [22] },
            },
          ],
          egress: [
            { action: 'Pass', source: { selector: "(all()) && tag3 == ''" }, destination: {} },
            { action: 'Pass', notProtocol: 'UDP', source: {}, destination: {} },
          ],
          selector: "projectcalico.org/namespace == 'default' || thing == 'value'",
          types: ['Ingress'],
          preDNAT: true,
          applyOnForward: true,
        },
      },
    ]);
    expect(notes).toEqual([
      'converted v1 policy nameyMcPolicyName to projectcalico.org/v3 GlobalNetworkPolicy default.nameymcpolicyname-32df456f',
      '  policy name "nameyMcPolicyName" is not a valid v3 name; renamed to "nameymcpolicyname-32df456f"',
      "  tags became label selectors: blocked == '', kingindanorth == '', tag1 == '', tag3 == '' (the profiles that held those tags now apply them as labels)",
      '  selector label calico/k8s_ns renamed to projectcalico.org/namespace',
    ]);
  });

  it.each([
    ['MaKe.-.MaKe', 'default.make-make-1b6971c8'],
    ['RAWR', 'default.rawr-03d81e1d'],
    ['meow', 'default.meow'],
  ])('names policy %s as %s', (name, v3) => {
    const { resources } = convertV1ToV3({ apiVersion: 'v1', kind: 'policy', metadata: { name }, spec: {} });
    expect(resources[0]!.metadata.name).toBe(v3);
  });

  it('puts a tiered policy in its tier', () => {
    const { resources } = convertV1ToV3({
      apiVersion: 'v1',
      kind: 'policy',
      metadata: { name: 'allow-dns', tier: 'platform' },
      spec: {
        doNotTrack: true,
        egress: [{ action: 'allow', protocol: 'udp', destination: { ports: [53] } }],
      },
    });
    expect(resources[0]).toMatchObject({
      metadata: { name: 'platform.allow-dns', labels: { 'projectcalico.org/tier': 'platform' } },
      spec: { tier: 'platform', types: ['Egress'], doNotTrack: true, applyOnForward: true },
    });
  });

  it.each([
    [{}, ['Ingress']],
    [{ egress: [{ action: 'allow' }] }, ['Egress']],
    [{ ingress: [{ action: 'allow' }], egress: [{ action: 'deny' }] }, ['Ingress', 'Egress']],
    [{ types: ['egress', 'ingress'] }, ['Egress', 'Ingress']],
  ])('types for spec %j are %j', (spec, types) => {
    const { resources } = convertV1ToV3({ apiVersion: 'v1', kind: 'policy', metadata: { name: 'p' }, spec });
    expect((resources[0]!.spec as { types: string[] }).types).toEqual(types);
  });

  it('refuses bad actions, protocols and ports, naming the field', () => {
    const policy = (rule: unknown) => ({
      apiVersion: 'v1',
      kind: 'policy',
      metadata: { name: 'p' },
      spec: { ingress: [rule] },
    });
    expect(conversionError(policy({ action: 'accept' })).message).toBe(
      'cannot convert v1 policy: spec.ingress[0].action: unknown action "accept" (expected allow, deny, log, pass or next-tier)',
    );
    expect(conversionError(policy({})).message).toMatch(/spec\.ingress\[0\]\.action: is required/);
    expect(conversionError(policy({ action: 'allow', protocol: 'gre' })).message).toMatch(
      /spec\.ingress\[0\]\.protocol: unknown protocol "gre"/,
    );
    expect(
      conversionError(policy({ action: 'allow', protocol: 'tcp', destination: { ports: ['90:80'] } }))
        .message,
    ).toMatch(
      /spec\.ingress\[0\]\.destination\.ports\[0\]: port range 90:80: minimum 90 is greater than maximum 80/,
    );
    expect(conversionError(policy({ action: 'allow', source: { nets: ['10.0.0.0/33'] } })).message).toMatch(
      /spec\.ingress\[0\]\.source\.nets\[0\]: "10\.0\.0\.0\/33" is not a CIDR/,
    );
  });
});

describe('v1 profile', () => {
  it('merges tags and labels into labelsToApply', () => {
    const { resources, notes } = convertYaml(`
apiVersion: v1
kind: profile
metadata:
  name: k8s_ns.Web
  tags: [frontend, public]
  labels: { tier: web }
spec:
  ingress:
  - action: allow
    source: { tag: frontend }
  egress:
  - action: allow
`);
    expect(resources).toEqual([
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'Profile',
        metadata: { name: 'kns.web-24de3a39' },
        spec: {
          ingress: [{ action: 'Allow', source: { selector: "frontend == ''" }, destination: {} }],
          egress: [{ action: 'Allow', source: {}, destination: {} }],
          labelsToApply: { tier: 'web', frontend: '', public: '' },
        },
      },
    ]);
    expect(notes[0]).toBe('converted v1 profile k8s_ns.Web to projectcalico.org/v3 Profile kns.web-24de3a39');
    expect(notes).toContain('  tags frontend, public became labelsToApply with empty values');
  });

  it('keeps a valid name unchanged', () => {
    const { resources } = convertV1ToV3({
      apiVersion: 'v1',
      kind: 'profile',
      metadata: { name: 'k8s_ns.web' },
    });
    expect(resources[0]).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'Profile',
      metadata: { name: 'kns.web' },
      spec: {},
    });
  });

  it('refuses a tag that clashes with a label', () => {
    const e = conversionError({
      apiVersion: 'v1',
      kind: 'profile',
      metadata: { name: 'p', tags: ['role'], labels: { role: 'db' } },
    });
    expect(e.message).toBe(
      'cannot convert v1 profile: metadata.tags[0]: tag "role" has the same name as label role="db"; change the label key before converting',
    );
  });
});

describe('v1 endpoints, nodes, peers, tiers', () => {
  it('converts a hostEndpoint', () => {
    const { resources, notes } = convertV1ToV3({
      apiVersion: 'v1',
      kind: 'hostEndpoint',
      metadata: { name: 'eth0', node: 'Node1', labels: { role: 'gateway' } },
      spec: {
        interfaceName: 'eth0',
        expectedIPs: ['fd00::0001', '198.18.0.1'],
        profiles: ['k8s_ns.default', 'edge'],
        ports: [{ name: 'ssh', protocol: 'tcp', port: 22 }],
      },
    });
    expect(resources).toEqual([
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'HostEndpoint',
        metadata: { name: 'node1.eth0', labels: { role: 'gateway' } },
        spec: {
          node: 'node1',
          interfaceName: 'eth0',
          expectedIPs: ['198.18.0.1', 'fd00::1'],
          profiles: ['kns.default', 'edge'],
          ports: [{ name: 'ssh', protocol: 'TCP', port: 22 }],
        },
      },
    ]);
    expect(notes).toEqual([
      'converted v1 hostEndpoint Node1/eth0 to projectcalico.org/v3 HostEndpoint node1.eth0',
    ]);
  });

  it('converts a k8s workloadEndpoint into its namespace with the computed name', () => {
    const { resources, notes } = convertV1ToV3({
      apiVersion: 'v1',
      kind: 'workloadEndpoint',
      metadata: {
        name: 'eth0',
        workload: 'prod.frontend-5gs43',
        orchestrator: 'k8s',
        node: 'node-1',
        activeInstanceID: '1337495556942031415',
        labels: { 'calico/k8s_ns': 'prod', app: 'frontend' },
      },
      spec: {
        ipNetworks: ['fd00::1', '198.19.0.5'],
        ipNATs: [{ internalIP: '198.19.0.5', externalIP: '198.18.0.50' }],
        ipv4Gateway: '169.254.1.1',
        profiles: ['k8s_ns.prod'],
        interfaceName: 'cali0ef24b1',
        mac: 'EE:EE:EE:EE:EE:0A',
        ports: [{ name: 'http', protocol: 'tcp', port: 8080 }],
      },
    });
    expect(resources).toEqual([
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'WorkloadEndpoint',
        metadata: {
          name: 'node--1-k8s-frontend--5gs43-eth0',
          namespace: 'prod',
          labels: { app: 'frontend', 'projectcalico.org/namespace': 'prod' },
        },
        spec: {
          orchestrator: 'k8s',
          node: 'node-1',
          containerID: '1337495556942031415',
          pod: 'frontend-5gs43',
          endpoint: 'eth0',
          ipNetworks: ['198.19.0.5/32', 'fd00::1/128'],
          ipNATs: [{ internalIP: '198.19.0.5', externalIP: '198.18.0.50' }],
          ipv4Gateway: '169.254.1.1',
          profiles: ['kns.prod'],
          interfaceName: 'cali0ef24b1',
          mac: 'ee:ee:ee:ee:ee:0a',
          ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
        },
      },
    ]);
    expect(notes).toEqual([
      'converted v1 workloadEndpoint node-1/k8s/prod.frontend-5gs43/eth0 to projectcalico.org/v3 WorkloadEndpoint prod/node--1-k8s-frontend--5gs43-eth0',
    ]);
  });

  it('converts cni and other-orchestrator workloadEndpoints', () => {
    const base = { name: 'eth0', node: 'h1' };
    const cni = convertV1ToV3({
      apiVersion: 'v1',
      kind: 'workloadEndpoint',
      metadata: { ...base, orchestrator: 'cni', workload: 'abc123' },
    }).resources[0]!;
    expect(cni.metadata).toEqual({ name: 'h1-cni-abc123-eth0', namespace: 'default' });
    expect(cni.spec).toEqual({ orchestrator: 'cni', node: 'h1', containerID: 'abc123', endpoint: 'eth0' });
    const os = convertV1ToV3({
      apiVersion: 'v1',
      kind: 'workloadEndpoint',
      metadata: { ...base, orchestrator: 'openstack', workload: 'vm-1' },
    }).resources[0]!;
    expect(os.metadata.name).toBe('h1-openstack-vm--1-eth0');
  });

  it('refuses a k8s workload ID without a namespace', () => {
    const e = conversionError({
      apiVersion: 'v1',
      kind: 'workloadEndpoint',
      metadata: { name: 'eth0', node: 'h1', orchestrator: 'k8s', workload: 'frontend' },
    });
    expect(e.message).toMatch(
      /^cannot convert v1 workloadEndpoint: metadata\.workload: malformed k8s workload ID "frontend"/,
    );
  });

  it('converts a node', () => {
    const { resources, notes } = convertV1ToV3({
      apiVersion: 'v1',
      kind: 'node',
      metadata: { name: 'Node1.Example.COM' },
      spec: {
        bgp: { asNumber: '1.10', ipv4Address: '198.18.0.11/24', ipv6Address: 'fd00:0::11/64' },
        orchRefs: [{ nodeName: 'node1', orchestrator: 'k8s' }],
      },
    });
    expect(resources).toEqual([
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'Node',
        metadata: { name: 'node1.example.com' },
        spec: {
          bgp: { asNumber: 65546, ipv4Address: '198.18.0.11/24', ipv6Address: 'fd00::11/64' },
          orchRefs: [{ nodeName: 'node1', orchestrator: 'k8s' }],
        },
      },
    ]);
    expect(notes[1]).toBe(
      '  node name "Node1.Example.COM" is not a valid v3 name; renamed to "node1.example.com"',
    );
    expect(
      conversionError({
        apiVersion: 'v1',
        kind: 'node',
        metadata: { name: 'n' },
        spec: { bgp: { asNumber: 1 } },
      }).message,
    ).toBe('cannot convert v1 node: spec.bgp: needs ipv4Address or ipv6Address');
  });

  it('converts global and node-scoped bgpPeers', () => {
    const { resources } = convertV1ToV3([
      {
        apiVersion: 'v1',
        kind: 'bgpPeer',
        metadata: { scope: 'global', peerIP: '198.18.0.254' },
        spec: { asNumber: 64513 },
      },
      {
        apiVersion: 'v1',
        kind: 'bgpPeer',
        metadata: { scope: 'node', node: 'Rack1-Node2', peerIP: 'aa:ff::12' },
        spec: { asNumber: 64514 },
      },
    ]);
    expect(resources).toEqual([
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'BGPPeer',
        metadata: { name: '198-18-0-254' },
        spec: { peerIP: '198.18.0.254', asNumber: 64513 },
      },
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'BGPPeer',
        metadata: { name: 'rack1-node2.00aa-00ff-0000-0000-0000-0000-0000-0012' },
        spec: { node: 'rack1-node2', peerIP: 'aa:ff::12', asNumber: 64514 },
      },
    ]);
    expect(
      conversionError({
        apiVersion: 'v1',
        kind: 'bgpPeer',
        metadata: { scope: 'node', peerIP: '198.18.0.1' },
      }).message,
    ).toBe('cannot convert v1 bgpPeer: metadata.node: is required for a node-scope peer');
  });

  it('converts a tier', () => {
    const { resources } = convertV1ToV3({
      apiVersion: 'v1',
      kind: 'tier',
      metadata: { name: 'Platform' },
      spec: { order: 100 },
    });
    expect(resources).toEqual([
      {
        apiVersion: 'projectcalico.org/v3',
        kind: 'Tier',
        metadata: { name: 'platform-123a7f2f' },
        spec: { order: 100 },
      },
    ]);
  });
});

describe('v1 document shapes', () => {
  it('converts a list of documents and a <kind>List, naming items in errors', () => {
    const { resources, notes } = convertYaml(`
- apiVersion: v1
  kind: ipPoolList
  items:
  - metadata: { cidr: 198.19.0.0/16 }
  - apiVersion: v1
    kind: ipPool
    metadata: { cidr: 198.18.0.0/24 }
- apiVersion: v1
  kind: tier
  metadata: { name: ops }
`);
    expect(resources.map((r) => `${r.kind} ${r.metadata.name}`)).toEqual([
      'IPPool 198-19-0-0-16',
      'IPPool 198-18-0-0-24',
      'Tier ops',
    ]);
    expect(notes).toHaveLength(3);
    const e = conversionError([{ apiVersion: 'v1', kind: 'ipPoolList', items: [{ metadata: {} }] }]);
    expect(e.message).toBe('cannot convert v1 ipPool: [0].items[0].metadata.cidr: is required');
  });

  it('tells v1 documents from Kubernetes v1 and Calico v3 ones', () => {
    expect(isV1Document({ apiVersion: 'v1', kind: 'node', metadata: { name: 'a' } })).toBe(true);
    expect(isV1Document({ apiVersion: 'v1', kind: 'ipPoolList', items: [] })).toBe(true);
    expect(
      isV1Document([
        { apiVersion: 'v1', kind: 'policy' },
        { apiVersion: 'v1', kind: 'profile' },
      ]),
    ).toBe(true);
    expect(isV1Document({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'a' } })).toBe(false);
    expect(isV1Document({ apiVersion: 'v1', kind: 'List', items: [] })).toBe(false);
    expect(isV1Document({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool' })).toBe(false);
    expect(isV1Document([])).toBe(false);
    expect(isV1Document('ipPool')).toBe(false);
  });

  it('refuses what is not a v1 document', () => {
    expect(conversionError({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool' }).message).toMatch(
      /^cannot convert: not a Calico v1 document/,
    );
    expect(conversionError({ apiVersion: 'v1', kind: 'globalNetworkSet' }).message).toBe(
      'cannot convert v1 document: kind: conversion of kind "globalNetworkSet" is not supported (v1 kinds: ipPool, policy, profile, hostEndpoint, workloadEndpoint, node, bgpPeer, tier)',
    );
  });
});
