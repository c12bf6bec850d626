import { describe, expect, it } from 'vitest';
import {
  determineNodeName,
  parseASNumber,
  parseAutodetectionMethod,
  parseIPSetting,
  parseNodeEnv,
  parsePool6Settings,
  parsePoolSettings,
} from './env.js';
import { isNodeError } from './errors.js';

const configError = (f: () => unknown, text: RegExp) => {
  try {
    f();
  } catch (e) {
    expect(isNodeError(e, 'config')).toBe(true);
    expect((e as Error).message).toMatch(text);
    return;
  }
  throw new Error('expected a config error');
};

describe('node name', () => {
  it('prefers NODENAME, then HOSTNAME, then the host name; trimmed and lower-cased', () => {
    expect(determineNodeName({ NODENAME: ' Node-A ', HOSTNAME: 'h' }, 'host')).toBe('node-a');
    expect(determineNodeName({ HOSTNAME: 'Worker1' }, 'host')).toBe('worker1');
    expect(determineNodeName({ NODENAME: '' }, 'My-Host')).toBe('my-host');
  });
});

describe('IP', () => {
  it('reads unset, autodetect, none, an address and an address with prefix', () => {
    expect(parseIPSetting(undefined)).toEqual({ kind: 'unset' });
    expect(parseIPSetting('')).toEqual({ kind: 'unset' });
    expect(parseIPSetting('autodetect')).toEqual({ kind: 'autodetect' });
    expect(parseIPSetting('none')).toEqual({ kind: 'none' });
    expect(parseIPSetting('198.18.0.11')).toEqual({ kind: 'address', value: '198.18.0.11' });
    expect(parseIPSetting('198.18.0.11/24')).toEqual({ kind: 'address', value: '198.18.0.11/24' });
  });
  it('refuses what is not an IPv4 address', () => {
    configError(() => parseIPSetting('fd00::1'), /IP="fd00::1" is not a valid IPv4 address/);
    configError(() => parseIPSetting('198.18.0.256'), /not a valid IPv4/);
  });
});

describe('IP_AUTODETECTION_METHOD', () => {
  it('parses every upstream method', () => {
    expect(parseAutodetectionMethod(undefined)).toEqual({ kind: 'first-found' });
    expect(parseAutodetectionMethod('first-found')).toEqual({ kind: 'first-found' });
    expect(parseAutodetectionMethod('can-reach=198.18.0.1')).toEqual({
      kind: 'can-reach',
      destination: '198.18.0.1',
    });
    expect(parseAutodetectionMethod('interface=eth.*, ens.*')).toEqual({
      kind: 'interface',
      patterns: ['eth.*', 'ens.*'],
    });
    expect(parseAutodetectionMethod('skip-interface=docker0')).toEqual({
      kind: 'skip-interface',
      patterns: ['docker0'],
    });
    expect(parseAutodetectionMethod('cidr=198.18.0.0/24,198.19.0.0/16')).toEqual({
      kind: 'cidr',
      cidrs: ['198.18.0.0/24', '198.19.0.0/16'],
    });
  });
  it('names the bad part', () => {
    configError(
      () => parseAutodetectionMethod('interface=eth(['),
      /"eth\(\[" is not a valid regular expression/,
    );
    configError(() => parseAutodetectionMethod('cidr=198.18.0.0/33'), /"198.18.0.0\/33" is not a valid CIDR/);
    configError(() => parseAutodetectionMethod('nearest'), /"nearest" is not a known method/);
    configError(() => parseAutodetectionMethod('kubernetes-internal-ip'), /needs the Kubernetes API/);
  });
});

describe('AS', () => {
  it('accepts plain and asdot numbers', () => {
    expect(parseASNumber('64512')).toBe(64512);
    expect(parseASNumber('4294967295')).toBe(4294967295);
    expect(parseASNumber('1.10')).toBe(65546);
  });
  it('refuses out-of-range values', () => {
    configError(() => parseASNumber('4294967296'), /AS="4294967296"/);
    configError(() => parseASNumber('65536.1'), /not a valid AS number/);
    configError(() => parseASNumber('as1'), /not a valid AS number/);
  });
});

describe('default pool settings', () => {
  it("are upstream's defaults when nothing is set", () => {
    expect(parsePoolSettings({})).toEqual({
      enabled: true,
      cidr: '192.168.0.0/16',
      ipipMode: 'Never',
      vxlanMode: 'Never',
      blockSize: 26,
      natOutgoing: true,
      nodeSelector: '',
      disableBGPExport: false,
    });
  });
  it('take the CALICO_IPV4POOL_* values, modes case-insensitively', () => {
    expect(
      parsePoolSettings({
        CALICO_IPV4POOL_CIDR: '198.19.0.0/16',
        CALICO_IPV4POOL_VXLAN: 'always',
        CALICO_IPV4POOL_BLOCK_SIZE: '28',
        CALICO_IPV4POOL_NAT_OUTGOING: 'false',
        CALICO_IPV4POOL_NODE_SELECTOR: 'zone == "a"',
      }),
    ).toMatchObject({
      cidr: '198.19.0.0/16',
      vxlanMode: 'Always',
      ipipMode: 'Never',
      blockSize: 28,
      natOutgoing: false,
      nodeSelector: 'zone == "a"',
    });
    expect(parsePoolSettings({ CALICO_IPV4POOL_IPIP: 'cross-subnet' }).ipipMode).toBe('CrossSubnet');
  });
  it('are disabled by NO_DEFAULT_POOLS or a none CIDR', () => {
    expect(parsePoolSettings({ NO_DEFAULT_POOLS: 'true' }).enabled).toBe(false);
    expect(parsePoolSettings({ CALICO_IPV4POOL_CIDR: 'none' }).enabled).toBe(false);
  });
  it('refuse contradictions and bad values', () => {
    configError(
      () => parsePoolSettings({ NO_DEFAULT_POOLS: 'true', CALICO_IPV4POOL_CIDR: '198.19.0.0/16' }),
      /NO_DEFAULT_POOLS=true cannot be combined/,
    );
    configError(() => parsePoolSettings({ CALICO_IPV4POOL_BLOCK_SIZE: '19' }), /out of range/);
    configError(() => parsePoolSettings({ CALICO_IPV4POOL_BLOCK_SIZE: 'big' }), /is not a number/);
    configError(
      () => parsePoolSettings({ CALICO_IPV4POOL_IPIP: 'sometimes' }),
      /CALICO_IPV4POOL_IPIP="sometimes"/,
    );
    configError(
      () => parsePoolSettings({ CALICO_IPV4POOL_IPIP: 'Always', CALICO_IPV4POOL_VXLAN: 'Always' }),
      /cannot both be enabled/,
    );
    configError(() => parsePoolSettings({ CALICO_IPV4POOL_CIDR: 'fd00::/64' }), /not a valid IPv4 CIDR/);
    configError(
      () => parsePoolSettings({ CALICO_IPV4POOL_NODE_SELECTOR: 'a ==' }),
      /CALICO_IPV4POOL_NODE_SELECTOR/,
    );
  });
});

describe('the whole DaemonSet environment', () => {
  it('parses into one value with the lab directories', () => {
    const env = parseNodeEnv(
      {
        NODENAME: 'n1',
        CALICO_NETWORKING_BACKEND: 'bird',
        CLUSTER_TYPE: 'k8s,bgp',
        IP: 'autodetect',
        IP_AUTODETECTION_METHOD: 'interface=eth0',
        AS: '64513',
        CALICO_K8S_NODE_REF: 'n1',
        CALICO_VAR_LIB_DIR: '/tmp/lab/n1/lib',
        CALICO_VAR_RUN_DIR: '/tmp/lab/n1/run',
      },
      'ignored',
    );
    expect(env).toMatchObject({
      nodeName: 'n1',
      networkingBackend: 'bird',
      clusterType: 'k8s,bgp',
      ip: { kind: 'autodetect' },
      autodetectionMethod: { kind: 'interface', patterns: ['eth0'] },
      asNumber: 64513,
      k8sNodeRef: 'n1',
      varLibDir: '/tmp/lab/n1/lib',
      varRunDir: '/tmp/lab/n1/run',
      birdConfigDir: '/etc/calico/confd/config',
      cniServiceSocket: '/tmp/lab/n1/run/cni-plugin.sock',
    });
  });
  it('runs the CNI plugin service where CALICO_CNI_SERVICE_SOCKET says, or not at all with none', () => {
    expect(parseNodeEnv({}, 'h').cniServiceSocket).toBe('/var/run/calico/cni-plugin.sock');
    expect(parseNodeEnv({ CALICO_CNI_SERVICE_SOCKET: '/run/x.sock' }, 'h').cniServiceSocket).toBe(
      '/run/x.sock',
    );
    expect(parseNodeEnv({ CALICO_CNI_SERVICE_SOCKET: 'none' }, 'h').cniServiceSocket).toBeUndefined();
    configError(
      () => parseNodeEnv({ CALICO_CNI_SERVICE_SOCKET: 'x.sock' }, 'h'),
      /CALICO_CNI_SERVICE_SOCKET="x.sock" must be an absolute path or none/,
    );
  });
  it('defaults the backend to bird and the directories to upstream paths', () => {
    const env = parseNodeEnv({}, 'host1');
    expect(env.networkingBackend).toBe('bird');
    expect(env.varLibDir).toBe('/var/lib/calico');
    expect(env.varRunDir).toBe('/var/run/calico');
    expect(env.asNumber).toBeUndefined();
    expect(env.k8sNodeRef).toBeUndefined();
  });
  it('refuses an unknown backend', () => {
    configError(() => parseNodeEnv({ CALICO_NETWORKING_BACKEND: 'gobgp' }, 'h'), /"gobgp" is not supported/);
  });
});

describe('IPv6 settings', () => {
  it('reads IP6 like IP, and refuses an IPv4 address there naming IP6', () => {
    expect(parseIPSetting(undefined, 6)).toEqual({ kind: 'unset' });
    expect(parseIPSetting('autodetect', 6)).toEqual({ kind: 'autodetect' });
    expect(parseIPSetting('fd00:18::11/64', 6)).toEqual({ kind: 'address', value: 'fd00:18::11/64' });
    configError(() => parseIPSetting('198.18.0.1', 6), /^IP6="198.18.0.1" is not a valid IPv6 address/);
    configError(() => parseIPSetting('fd00::1', 4), /^IP="fd00::1" is not a valid IPv4 address/);
  });
  it('names IP6_AUTODETECTION_METHOD in its errors', () => {
    expect(parseAutodetectionMethod('cidr=fd00:18::/64', 'IP6_AUTODETECTION_METHOD')).toEqual({
      kind: 'cidr',
      cidrs: ['fd00:18::/64'],
    });
    configError(
      () => parseAutodetectionMethod('bogus', 'IP6_AUTODETECTION_METHOD'),
      /^IP6_AUTODETECTION_METHOD="bogus" is not a known method/,
    );
  });
  it("pool defaults are upstream's: block 122, no NAT outgoing, CIDR chosen later", () => {
    expect(parsePool6Settings({})).toEqual({
      enabled: true,
      ipipMode: 'Never',
      vxlanMode: 'Never',
      blockSize: 122,
      natOutgoing: false,
      nodeSelector: '',
      disableBGPExport: false,
    });
  });
  it('pool takes CALICO_IPV6POOL_*; FELIX_IPV6SUPPORT=false, NO_DEFAULT_POOLS or none disable it', () => {
    expect(
      parsePool6Settings({
        CALICO_IPV6POOL_CIDR: 'fd00:19::/48',
        CALICO_IPV6POOL_VXLAN: 'Always',
        CALICO_IPV6POOL_BLOCK_SIZE: '120',
        CALICO_IPV6POOL_NAT_OUTGOING: 'true',
      }),
    ).toMatchObject({ cidr: 'fd00:19::/48', vxlanMode: 'Always', blockSize: 120, natOutgoing: true });
    expect(
      parsePool6Settings({ FELIX_IPV6SUPPORT: 'false', CALICO_IPV6POOL_CIDR: 'fd00:19::/48' }).enabled,
    ).toBe(false);
    expect(parsePool6Settings({ NO_DEFAULT_POOLS: 'true' }).enabled).toBe(false);
    expect(parsePool6Settings({ CALICO_IPV6POOL_CIDR: 'none' }).enabled).toBe(false);
  });
  it('pool refuses IPIP, an IPv4 CIDR, a block size out of range and a CIDR smaller than a block', () => {
    configError(() => parsePool6Settings({ CALICO_IPV6POOL_IPIP: 'Always' }), /IPIP cannot carry IPv6/);
    configError(
      () => parsePool6Settings({ CALICO_IPV6POOL_CIDR: '198.19.0.0/16' }),
      /^CALICO_IPV6POOL_CIDR="198.19.0.0\/16" is not a valid IPv6 CIDR/,
    );
    configError(
      () => parsePool6Settings({ CALICO_IPV6POOL_BLOCK_SIZE: '26' }),
      /IPv6 block sizes are 116 to 128/,
    );
    configError(
      () => parsePool6Settings({ CALICO_IPV6POOL_CIDR: 'fd00:19::/124' }),
      /smaller than one block \(\/122\)/,
    );
  });
  it('parseNodeEnv carries IP6, its method, the pool and FELIX_IPV6SUPPORT', () => {
    const env = parseNodeEnv(
      {
        NODENAME: 'n1',
        IP6: 'autodetect',
        IP6_AUTODETECTION_METHOD: 'interface=eth0',
        FELIX_IPV6SUPPORT: 'true',
      },
      'h',
    );
    expect(env.ip6).toEqual({ kind: 'autodetect' });
    expect(env.ip6AutodetectionMethod).toEqual({ kind: 'interface', patterns: ['eth0'] });
    expect(env.pool6.enabled).toBe(true);
    expect(env.ipv6Support).toBe(true);
    expect(parseNodeEnv({ NODENAME: 'n1', FELIX_IPV6SUPPORT: 'false' }, 'h').ipv6Support).toBe(false);
  });
});
