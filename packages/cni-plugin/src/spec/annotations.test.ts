import { describe, expect, it } from 'vitest';
import { isCniPluginError } from '../errors.js';
import {
  type AnnotationInput,
  floatingIpNats,
  maskedCidr,
  parsePodNetworkRequest,
  parseUnicastMac,
} from './annotations.js';

const input = (
  podAnnotations: Record<string, string>,
  o: Partial<AnnotationInput> = {},
): AnnotationInput => ({
  pod: 'shop/web-1',
  namespace: 'shop',
  podAnnotations,
  namespaceAnnotations: {},
  ipamType: 'calico-ipam',
  featureControl: { ipAddrsNoIpam: false, floatingIps: false },
  ...o,
});

function errorOf(f: () => unknown): { code: string; message: string } {
  try {
    f();
  } catch (e) {
    if (isCniPluginError(e)) return { code: e.code, message: e.message };
    throw e;
  }
  throw new Error('did not throw');
}

describe('parsePodNetworkRequest', () => {
  it('no annotations: addresses from IPAM as configured', () => {
    expect(parsePodNetworkRequest(input({}))).toEqual({
      ipam: {},
      addresses: { kind: 'ipam' },
      floatingIps: [],
      allowedSourcePrefixes: [],
    });
  });

  it('pool and family annotations: the pod’s beat the namespace’s; empty values count as absent', () => {
    const r = parsePodNetworkRequest(
      input(
        { 'cni.projectcalico.org/ipv4pools': '["pod-pool"]', 'cni.projectcalico.org/ipv6pools': '' },
        {
          namespaceAnnotations: {
            'cni.projectcalico.org/ipv4pools': '["ns-pool"]',
            'cni.projectcalico.org/ipv6pools': '["fd00::/64"]',
            'cni.projectcalico.org/ipFamilies': '["IPv6"]',
          },
        },
      ),
    );
    expect(r.ipam).toEqual({
      ipv4Pools: ['pod-pool'],
      ipv6Pools: ['fd00::/64'],
      assignIpv4: false,
      assignIpv6: true,
    });
  });

  it('pool annotations are ignored for an IPAM plugin other than calico-ipam, as upstream', () => {
    const r = parsePodNetworkRequest(
      input({ 'cni.projectcalico.org/ipv4pools': 'not json' }, { ipamType: 'host-local' }),
    );
    expect(r.ipam).toEqual({});
  });

  it('names the namespace when its annotation is bad', () => {
    expect(
      errorOf(() =>
        parsePodNetworkRequest(
          input({}, { namespaceAnnotations: { 'cni.projectcalico.org/ipFamilies': '["IPv5"]' } }),
        ),
      ),
    ).toEqual({
      code: 'invalid-annotation',
      message:
        'namespace shop: annotation cni.projectcalico.org/ipFamilies=["IPv5"] has "IPv5": families are "IPv4" and "IPv6"',
    });
  });

  it('ipAddrs: one address per family, canonical; refused with another IPAM plugin', () => {
    expect(
      parsePodNetworkRequest(input({ 'cni.projectcalico.org/ipAddrs': '["10.0.0.5","2001:DB8:0:0::5"]' }))
        .addresses,
    ).toEqual({ kind: 'ipam-exact', ips: ['10.0.0.5', '2001:db8::5'] });
    expect(
      errorOf(() => parsePodNetworkRequest(input({ 'cni.projectcalico.org/ipAddrs': '[]' }))).message,
    ).toBe(
      'pod shop/web-1: annotation cni.projectcalico.org/ipAddrs=[] is an empty list: name at least one address',
    );
    expect(
      errorOf(() =>
        parsePodNetworkRequest(
          input({ 'cni.projectcalico.org/ipAddrs': '["10.0.0.5"]' }, { ipamType: 'host-local' }),
        ),
      ).message,
    ).toBe(
      'pod shop/web-1: annotation cni.projectcalico.org/ipAddrs=["10.0.0.5"] needs calico-ipam, not "host-local"',
    );
    expect(
      errorOf(() => parsePodNetworkRequest(input({ 'cni.projectcalico.org/ipAddrs': '{"ip":"10.0.0.5"}' })))
        .message,
    ).toMatch(/must be a JSON list of strings/);
  });

  it('ipAddrsNoIpam with the feature enabled', () => {
    const r = parsePodNetworkRequest(
      input(
        { 'cni.projectcalico.org/ipAddrsNoIpam': '["10.0.0.5"]' },
        { featureControl: { ipAddrsNoIpam: true, floatingIps: false } },
      ),
    );
    expect(r.addresses).toEqual({ kind: 'no-ipam', ips: ['10.0.0.5'] });
  });

  it('floatingIPs, hwAddr and allowedSourcePrefixes', () => {
    const r = parsePodNetworkRequest(
      input(
        {
          'cni.projectcalico.org/floatingIPs': '["203.0.113.9"]',
          'cni.projectcalico.org/hwAddr': '0A-00-00-00-00-01',
          'cni.projectcalico.org/allowedSourcePrefixes': '["10.1.2.3/16", "2001:db8::1/64"]',
        },
        { featureControl: { ipAddrsNoIpam: false, floatingIps: true } },
      ),
    );
    expect(r).toMatchObject({
      floatingIps: ['203.0.113.9'],
      containerMac: '0a:00:00:00:00:01',
      allowedSourcePrefixes: ['10.1.0.0/16', '2001:db8::/64'],
    });
    expect(
      errorOf(() =>
        parsePodNetworkRequest(input({ 'cni.projectcalico.org/allowedSourcePrefixes': '["10.1.2.3"]' })),
      ).message,
    ).toMatch(/has "10.1.2.3", which is not a CIDR$/);
  });
});

describe('helpers', () => {
  it('parseUnicastMac refuses multicast, broadcast, all-zero and malformed addresses', () => {
    expect(parseUnicastMac('02:00:00:00:00:01')).toBe('02:00:00:00:00:01');
    for (const bad of [
      'ff:ff:ff:ff:ff:ff',
      '01:00:5e:00:00:01',
      '00:00:00:00:00:00',
      '02:00:00:00:00',
      '02:00-00:00:00:01',
    ]) {
      expect(parseUnicastMac(bad), bad).toBeUndefined();
    }
  });

  it('maskedCidr clears host bits', () => {
    expect(maskedCidr('192.168.7.200/25')).toBe('192.168.7.128/25');
    expect(maskedCidr('fd00:1:2:3::9/48')).toBe('fd00:1:2::/48');
    expect(maskedCidr('10.0.0.1/33')).toBeUndefined();
  });

  it('floatingIpNats maps each family to the pod’s address of that family', () => {
    expect(floatingIpNats('s/p', ['203.0.113.9', '2001:db8::9'], ['10.0.0.5/32', 'fd00::5/128'])).toEqual([
      { internalIP: '10.0.0.5', externalIP: '203.0.113.9' },
      { internalIP: 'fd00::5', externalIP: '2001:db8::9' },
    ]);
  });
});
