import { describe, expect, it } from 'vitest';
import { interfaceSysctlKey, sysctlPath } from './sysctl-key.js';

describe('sysctlPath', () => {
  it('maps plain dotted keys', () => {
    expect(sysctlPath('net.ipv4.ip_forward')).toBe('net/ipv4/ip_forward');
    expect(sysctlPath('net.ipv4.conf.all.rp_filter')).toBe('net/ipv4/conf/all/rp_filter');
    expect(sysctlPath('net.ipv4.conf.cali12345678901.proxy_arp')).toBe(
      'net/ipv4/conf/cali12345678901/proxy_arp',
    );
    expect(sysctlPath('net.ipv4.neigh.cali1.proxy_delay')).toBe('net/ipv4/neigh/cali1/proxy_delay');
  });

  it('keeps dotted interface names whole in per-interface keys', () => {
    expect(sysctlPath('net.ipv4.conf.eth0.100.proxy_arp')).toBe('net/ipv4/conf/eth0.100/proxy_arp');
    expect(sysctlPath('net.ipv6.conf.vxlan.calico.disable_ipv6')).toBe(
      'net/ipv6/conf/vxlan.calico/disable_ipv6',
    );
    expect(sysctlPath('net.ipv6.neigh.a.b.c.retrans_time_ms')).toBe('net/ipv6/neigh/a.b.c/retrans_time_ms');
  });

  it('takes the slash form as it is', () => {
    expect(sysctlPath('net/ipv4/conf/eth0.100/proxy_arp')).toBe('net/ipv4/conf/eth0.100/proxy_arp');
    expect(interfaceSysctlKey(6, 'conf', 'vxlan-v6.calico', 'accept_ra')).toBe(
      'net/ipv6/conf/vxlan-v6.calico/accept_ra',
    );
  });

  it('refuses keys that would leave /proc/sys or have empty segments', () => {
    for (const bad of ['', 'net..ipv4', 'net/ipv4/../../etc/passwd', '/net/ipv4/ip_forward', 'net/ipv4/']) {
      expect(() => sysctlPath(bad)).toThrow(/invalid sysctl key/);
    }
  });
});
