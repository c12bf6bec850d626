/**
 * Felix configuration precedence and parsing: env > file > node.<name> > default > built-in, local
 * parameters only from env/file, bad values fall through to the next source, datastore values in
 * their API form (durations, port objects, Drop/Accept) read like upstream's v1 text.
 */
import { describe, expect, it } from 'vitest';
import { clientConfigOf, hostMtuOf, podMtu, rulesConfigOf, statusPrefix } from './derived.js';
import { changedParams, resolveFelixConfig } from './felix-config.js';
import { parseIni } from './ini.js';
import { parseGoDuration, parsePortList } from './values.js';

describe('resolveFelixConfig', () => {
  it('uses upstream built-in defaults when nothing is set', () => {
    const { config, sources, problems } = resolveFelixConfig({ hostname: 'node-a' });
    expect(problems).toEqual([]);
    expect(config).toMatchObject({
      FelixHostname: 'node-a',
      DatastoreType: 'etcdv3',
      EtcdAddr: '127.0.0.1:2379',
      LogSeverityScreen: 'INFO',
      HealthEnabled: false,
      HealthHost: 'localhost',
      HealthPort: 9099,
      PrometheusMetricsEnabled: false,
      PrometheusMetricsPort: 9091,
      ReportingIntervalSecs: 30,
      ReportingTTLSecs: 90,
      NftablesRefreshInterval: 180,
      RouteRefreshInterval: 90,
      InterfacePrefix: ['cali'],
      DefaultEndpointToHostAction: 'DROP',
      Ipv6Support: true,
      VXLANEnabled: undefined,
      VXLANPort: 4789,
      VXLANVNI: 4096,
      NftablesMarkMask: 0xffff0000,
      DeviceRouteProtocol: 3,
      MTUFilePath: '/var/lib/calico/mtu',
    });
    expect(config.FailsafeInboundHostPorts).toHaveLength(9);
    expect(config.FailsafeInboundHostPorts[0]).toEqual({ protocol: 'tcp', port: 22 });
    expect(config.FailsafeOutboundHostPorts[0]).toEqual({ protocol: 'udp', port: 53 });
    expect(sources.HealthPort).toBe('default');
  });

  it('takes each parameter from the highest source that sets it: env > file > node > default', () => {
    const { config, sources } = resolveFelixConfig({
      env: { FELIX_HEALTHPORT: '9001', felix_logseverityscreen: 'debug', PATH: '/bin' },
      file: { HealthPort: '9002', healthhost: '0.0.0.0', ReportingIntervalSecs: '7' },
      perHost: { healthHost: '127.0.0.9', reportingInterval: '11s', prometheusMetricsPort: 9300 },
      global: {
        reportingInterval: '1m',
        prometheusMetricsPort: 9400,
        ipv6Support: false,
        routeRefreshInterval: '45s',
      },
    });
    expect(config.HealthPort).toBe(9001);
    expect(sources.HealthPort).toBe('env');
    expect(config.LogSeverityScreen).toBe('DEBUG');
    expect(config.HealthHost).toBe('0.0.0.0');
    expect(sources.HealthHost).toBe('file');
    expect(config.ReportingIntervalSecs).toBe(7);
    expect(config.PrometheusMetricsPort).toBe(9300);
    expect(sources.PrometheusMetricsPort).toBe('datastore-per-host');
    expect(config.Ipv6Support).toBe(false);
    expect(config.RouteRefreshInterval).toBe(45);
    expect(sources.RouteRefreshInterval).toBe('datastore-global');
  });

  it('reads local parameters (datastore, hostname) only from env and file', () => {
    const { config, problems } = resolveFelixConfig({
      env: { FELIX_ETCDENDPOINTS: 'http://127.0.0.1:23790' },
      file: { FelixHostname: 'from-file' },
      global: { felixHostname: 'x' } as never,
      hostname: 'os-name',
    });
    expect(config.FelixHostname).toBe('from-file');
    expect(config.EtcdEndpoints).toEqual(['http://127.0.0.1:23790']);
    expect(problems).toEqual([]);
    expect(resolveFelixConfig({ hostname: 'os-name' }).config.FelixHostname).toBe('os-name');
  });

  it('ignores a value that does not parse and lets the next source decide', () => {
    const { config, problems } = resolveFelixConfig({
      env: { FELIX_HEALTHPORT: 'ninety', FELIX_DEFAULTENDPOINTTOHOSTACTION: 'maybe' },
      file: { HealthPort: '70000' },
      global: { healthPort: 9555, defaultEndpointToHostAction: 'Accept' },
    });
    expect(config.HealthPort).toBe(9555);
    expect(config.DefaultEndpointToHostAction).toBe('ACCEPT');
    expect(problems.map((p) => `${p.param}@${p.source}`)).toEqual([
      'HealthPort@env',
      'HealthPort@file',
      'DefaultEndpointToHostAction@env',
    ]);
  });

  it('reads datastore API forms: port objects, durations, optional booleans, masks', () => {
    const { config } = resolveFelixConfig({
      global: {
        failsafeInboundHostPorts: [
          { protocol: 'TCP', port: 22 },
          { protocol: 'UDP', port: 68, net: '198.18.0.0/16' },
        ],
        failsafeOutboundHostPorts: [],
        nftablesRefreshInterval: '1m30s',
        vxlanEnabled: true,
        nftablesMarkMask: 0xff00,
        interfacePrefix: 'cali,tap',
      },
    });
    expect(config.FailsafeInboundHostPorts).toEqual([
      { protocol: 'tcp', port: 22 },
      { protocol: 'udp', port: 68, net: '198.18.0.0/16' },
    ]);
    expect(config.FailsafeOutboundHostPorts).toEqual([]);
    expect(config.NftablesRefreshInterval).toBe(90);
    expect(config.VXLANEnabled).toBe(true);
    expect(config.NftablesMarkMask).toBe(0xff00);
    expect(config.InterfacePrefix).toEqual(['cali', 'tap']);
  });

  it('reads the external nodes from externalNodesList or FELIX_EXTERNALNODESCIDRLIST; a bad entry is named', () => {
    expect(resolveFelixConfig({}).config.ExternalNodesCIDRList).toEqual([]);
    expect(
      resolveFelixConfig({ global: { externalNodesList: ['198.18.5.0/24', '198.18.6.7', '198.18.9.0/23'] } })
        .config.ExternalNodesCIDRList,
    ).toEqual(['198.18.5.0/24', '198.18.6.7/32', '198.18.8.0/23']);
    const { config, problems } = resolveFelixConfig({
      env: { FELIX_EXTERNALNODESCIDRLIST: '198.18.7.0/24, 198.18.300.1' },
      global: { externalNodesList: ['198.18.5.0/24'] },
    });
    expect(problems).toEqual([
      {
        param: 'ExternalNodesCIDRList',
        source: 'env',
        message: 'ignored: "198.18.300.1" is not an IPv4 address or CIDR',
      },
    ]);
    expect(config.ExternalNodesCIDRList).toEqual(['198.18.5.0/24']);
    expect(
      resolveFelixConfig({ env: { FELIX_EXTERNALNODESCIDRLIST: '198.18.7.0/33' } }).problems[0]?.message,
    ).toBe('ignored: "198.18.7.0/33" is not an IPv4 address or CIDR');
  });

  it('reads the NAT outgoing options: natPortRange (int or N:M), exclusions, interface filter', () => {
    const none = resolveFelixConfig({}).config;
    expect([none.NATPortRange, none.NATOutgoingExclusions, none.IptablesNATOutgoingInterfaceFilter]).toEqual([
      undefined,
      'IPPoolsOnly',
      '',
    ]);
    const { config, problems } = resolveFelixConfig({
      env: { FELIX_NATPORTRANGE: '40000' },
      global: {
        natPortRange: '32768:65535',
        natOutgoingExclusions: 'IPPoolsAndHostIPs',
        iptablesNATOutgoingInterfaceFilter: 'eth+',
      } as Parameters<typeof resolveFelixConfig>[0]['global'],
    });
    expect(problems).toEqual([]);
    expect(config.NATPortRange).toEqual({ min: 40000, max: 40000 });
    expect(config.NATOutgoingExclusions).toBe('IPPoolsAndHostIPs');
    expect(config.IptablesNATOutgoingInterfaceFilter).toBe('eth+');
    expect(rulesConfigOf(config)).toMatchObject({
      natPortRange: { min: 40000, max: 40000 },
      natOutgoingExclusions: 'IPPoolsAndHostIPs',
      natOutgoingInterfaceFilter: 'eth+',
    });
    expect(resolveFelixConfig({ env: { FELIX_NATPORTRANGE: '0:0' } }).config.NATPortRange).toBeUndefined();
    for (const [raw, message] of [
      ['70000', 'ignored: "70000" is not a port or a port range N:M'],
      ['2000:1000', 'ignored: "2000:1000": the range\'s first port is greater than its last'],
      ['1-2', 'ignored: "1-2" is not a port or a port range N:M'],
    ]) {
      const r = resolveFelixConfig({ env: { FELIX_NATPORTRANGE: raw } });
      expect(r.problems).toEqual([{ param: 'NATPortRange', source: 'env', message }]);
      expect(r.config.NATPortRange).toBeUndefined();
    }
    expect(
      resolveFelixConfig({ env: { FELIX_NATOUTGOINGEXCLUSIONS: 'HostsOnly' } }).problems[0]?.message,
    ).toBe('ignored: "HostsOnly" is not one of IPPoolsOnly, IPPoolsAndHostIPs');
  });

  it('accepts `none` for no failsafe ports and lists changed parameters', () => {
    const a = resolveFelixConfig({}).config;
    const b = resolveFelixConfig({
      env: { FELIX_FAILSAFEINBOUNDHOSTPORTS: 'none', FELIX_HEALTHENABLED: 'true' },
    }).config;
    expect(b.FailsafeInboundHostPorts).toEqual([]);
    expect(changedParams(a, b)).toEqual(['HealthEnabled', 'FailsafeInboundHostPorts']);
  });
});

describe('derived configuration', () => {
  const base = resolveFelixConfig({ hostname: 'node-a' }).config;

  it('maps to the rule renderer config', () => {
    const c = resolveFelixConfig({
      env: {
        FELIX_DEFAULTENDPOINTTOHOSTACTION: 'ACCEPT',
        FELIX_IPV6SUPPORT: 'false',
        FELIX_NATOUTGOINGADDRESS: '198.18.0.1',
      },
    }).config;
    expect(rulesConfigOf(c)).toMatchObject({
      defaultEndpointToHostAction: 'Accept',
      ipv6Support: false,
      natOutgoingAddress: '198.18.0.1',
      interfacePrefixes: ['cali'],
      markMask: 0xffff0000,
    });
  });

  it('builds the etcd client config from EtcdEndpoints or EtcdScheme://EtcdAddr', () => {
    expect(clientConfigOf(base)).toEqual({
      datastoreType: 'etcdv3',
      etcdEndpoints: ['http://127.0.0.1:2379'],
    });
    const tls = resolveFelixConfig({
      env: {
        FELIX_ETCDENDPOINTS: 'https://198.18.0.5:2379',
        FELIX_ETCDCAFILE: '/ca',
        FELIX_ETCDCERTFILE: '/c',
        FELIX_ETCDKEYFILE: '/k',
      },
    }).config;
    expect(clientConfigOf(tls)).toEqual({
      datastoreType: 'etcdv3',
      etcdEndpoints: ['https://198.18.0.5:2379'],
      etcdCACertFile: '/ca',
      etcdCertFile: '/c',
      etcdKeyFile: '/k',
    });
  });

  it('names the status keys with the region', () => {
    expect(statusPrefix(base)).toBe('/calico/felix/v2/no-region/host/node-a');
    const r = resolveFelixConfig({ hostname: 'n', global: { openstackRegion: 'r1' } }).config;
    expect(statusPrefix(r)).toBe('/calico/felix/v2/region-r1/host/n');
  });

  it('computes the pod MTU from the host MTU and enabled encapsulation', () => {
    const links = [
      { name: 'eth0', mtu: 1500 },
      { name: 'eth1', mtu: 9000 },
      { name: 'cali1', mtu: 1000 },
    ];
    expect(hostMtuOf(base, links)).toBe(1500);
    expect(podMtu(base, 1500, { vxlan: false, ipip: false })).toBe(1500);
    expect(podMtu(base, 1500, { vxlan: true, ipip: true })).toBe(1450);
    const vx = resolveFelixConfig({ env: { FELIX_VXLANMTU: '1400', FELIX_VXLANENABLED: 'true' } }).config;
    expect(podMtu(vx, 1500, { vxlan: false, ipip: false })).toBe(1400);
  });
});

describe('value parsers', () => {
  it('parses Go durations and port lists', () => {
    expect(parseGoDuration('1h2m3.5s')).toBe(3723.5);
    expect(parseGoDuration('250ms')).toBe(0.25);
    expect(() => parseGoDuration('5 minutes')).toThrow(RangeError);
    expect(parsePortList('tcp:22, udp:198.18.0.0/16:68,8080')).toEqual([
      { protocol: 'tcp', port: 22 },
      { protocol: 'udp', port: 68, net: '198.18.0.0/16' },
      { protocol: 'tcp', port: 8080 },
    ]);
    expect(() => parsePortList('icmp:1')).toThrow(/protocol/);
  });

  it('reads INI files with sections and comments', () => {
    expect(
      parseIni(
        '[global]\n; comment\n# another\nHealthPort = 9100\nLogSeverityScreen=Debug\n\n[x]\nfoo: "bar"\n',
      ),
    ).toEqual({
      HealthPort: '9100',
      LogSeverityScreen: 'Debug',
      foo: 'bar',
    });
  });
});
