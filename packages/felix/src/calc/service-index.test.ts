/** Policy `services` matches: a Service's IP sets follow its EndpointSlices and cluster IPs. */
import type { K8sEndpointSlice, K8sService } from '@calico-ts/api';
import { describe, expect, it } from 'vitest';
import { CalcGraph } from './calc-graph.js';
import { serviceIPSetId } from './ids.js';
import { np, wep } from './testing-internal/resources.js';
import type { CalcResource } from './types.js';

function service(
  ns: string,
  name: string,
  clusterIP: string,
  ports: { port: number; protocol?: string }[],
): K8sService {
  return {
    kind: 'Service',
    metadata: { name, namespace: ns },
    spec: { clusterIP, clusterIPs: [clusterIP], ports },
  };
}

function slice(
  ns: string,
  name: string,
  svc: string,
  addrs: string[],
  ports: { port: number; protocol?: string }[],
): K8sEndpointSlice {
  return {
    kind: 'EndpointSlice',
    metadata: { name, namespace: ns, labels: { 'kubernetes.io/service-name': svc } },
    addressType: 'IPv4',
    endpoints: addrs.map((a) => ({ addresses: [a], conditions: { ready: true } })),
    ports,
  };
}

const client = wep('app', 'client', {
  labels: { app: 'client' },
  ips: ['198.19.0.9/32'],
  iface: 'caliclient',
});
const dnsPolicy = np('app', 'dns', {
  selector: "app == 'client'",
  types: ['Egress'],
  egress: [{ action: 'Allow', destination: { services: { name: 'kube-dns', namespace: 'kube-system' } } }],
});
const fromFrontend = np('app', 'from-frontend', {
  selector: "app == 'client'",
  ingress: [{ action: 'Allow', source: { services: { name: 'frontend' } } }],
});

const DST = serviceIPSetId('kube-system', 'kube-dns', true);
const SRC = serviceIPSetId('app', 'frontend', false);

function graphWith(...rs: CalcResource[]): CalcGraph {
  const g = new CalcGraph({ hostname: 'node1' });
  for (const r of rs) g.onUpdate({ kind: 'set', resource: r });
  g.onUpdate({ kind: 'in-sync' });
  g.flush();
  return g;
}

describe('service IP sets', () => {
  it('are empty while the Service is unknown, so the rule matches nothing', () => {
    const g = graphWith(client, dnsPolicy, fromFrontend);
    const st = g.state();
    expect(st.ipSets[DST]).toMatchObject({ type: 'ip-port', members: [] });
    expect(st.ipSets[SRC]).toMatchObject({ type: 'net', members: [] });
    expect(st.policies['np/app/dns']!.outbound[0]!.dstIPPortSetIds).toEqual([DST]);
    expect(st.policies['np/app/from-frontend']!.inbound[0]!.srcIPSetIds).toEqual([SRC]);
  });

  it('hold endpoint address × port and cluster IP × service port for a destination', () => {
    const g = graphWith(
      client,
      dnsPolicy,
      service('kube-system', 'kube-dns', '198.18.128.10', [
        { port: 53, protocol: 'UDP' },
        { port: 53, protocol: 'TCP' },
      ]),
      slice(
        'kube-system',
        'kube-dns-abc',
        'kube-dns',
        ['198.19.1.5', '198.19.2.6'],
        [
          { port: 5353, protocol: 'UDP' },
          { port: 5353, protocol: 'TCP' },
        ],
      ),
    );
    expect(g.state().ipSets[DST]!.members).toEqual([
      '198.18.128.10,tcp:53',
      '198.18.128.10,udp:53',
      '198.19.1.5,tcp:5353',
      '198.19.1.5,udp:5353',
      '198.19.2.6,tcp:5353',
      '198.19.2.6,udp:5353',
    ]);
  });

  it('hold only the endpoint addresses for a source, in the policy namespace by default', () => {
    const g = graphWith(
      client,
      fromFrontend,
      service('app', 'frontend', '198.18.128.20', [{ port: 80 }]),
      slice('app', 'frontend-1', 'frontend', ['198.19.3.1'], [{ port: 8080 }]),
      slice('other', 'frontend-1', 'frontend', ['198.19.9.9'], [{ port: 8080 }]),
    );
    expect(g.state().ipSets[SRC]!.members).toEqual(['198.19.3.1/32']);
  });

  it('leave out the cluster IP while the Service has no endpoints', () => {
    const g = graphWith(
      client,
      dnsPolicy,
      service('kube-system', 'kube-dns', '198.18.128.10', [{ port: 53, protocol: 'UDP' }]),
    );
    expect(g.state().ipSets[DST]!.members).toEqual([]);
  });

  it('follow slice changes and deletions', () => {
    const g = graphWith(client, dnsPolicy);
    const s1 = slice('kube-system', 'kd-1', 'kube-dns', ['198.19.1.5'], [{ port: 53, protocol: 'UDP' }]);
    g.onUpdate({ kind: 'set', resource: s1 });
    let diff = g.flush();
    expect(diff.ipSetsUpdated.map((s) => s.members)).toEqual([['198.19.1.5,udp:53']]);
    g.onUpdate({
      kind: 'set',
      resource: slice('kube-system', 'kd-1', 'kube-dns', ['198.19.1.7'], [{ port: 53, protocol: 'UDP' }]),
    });
    diff = g.flush();
    expect(diff.ipSetsUpdated.map((s) => s.members)).toEqual([['198.19.1.7,udp:53']]);
    g.onUpdate({ kind: 'delete', resource: s1 });
    diff = g.flush();
    expect(diff.ipSetsUpdated.map((s) => s.members)).toEqual([[]]);
  });

  it('come and go with the policies that use them', () => {
    const g = graphWith(client, dnsPolicy);
    expect(Object.keys(g.state().ipSets)).toContain(DST);
    g.onUpdate({ kind: 'delete', resource: dnsPolicy });
    const diff = g.flush();
    expect(diff.ipSetsRemoved).toEqual([DST]);
  });
});
