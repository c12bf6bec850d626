import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CniPluginError } from '../errors.js';
import { parseNetConf, versionRequestVersion } from './netconf.js';

const seed = readFileSync(join(import.meta.dirname, '../../test/fixtures/10-calico.conf'), 'utf8');

function errorOf(f: () => unknown): CniPluginError {
  try {
    f();
  } catch (e) {
    return e as CniPluginError;
  }
  throw new Error('no error');
}

const conf = (o: Record<string, unknown>) =>
  JSON.stringify({ cniVersion: '1.0.0', name: 'net1', type: 'calico', ipam: { type: 'calico-ipam' }, ...o });

describe('parseNetConf: where the Kubernetes API is', () => {
  it('the seed config: its kubeconfig, and policy.k8s_api_root without the old /api/v1 suffix', () => {
    const c = parseNetConf(
      conf({
        kubernetes: { kubeconfig: '/etc/cni/net.d/calico-kubeconfig' },
        policy: { type: 'k8s', k8s_api_root: 'https://10.233.0.1:443/api/v1/', k8s_auth_token: 'tok' },
      }),
      'ADD',
    );
    expect(c.kubeApi).toEqual({
      kubeconfig: '/etc/cni/net.d/calico-kubeconfig',
      apiRoot: 'https://10.233.0.1:443',
      authToken: 'tok',
    });
  });

  it('kubernetes.k8s_api_root wins over policy.k8s_api_root; client files are kept', () => {
    const c = parseNetConf(
      conf({
        kubernetes: { k8s_api_root: 'https://api:6443' },
        policy: {
          k8s_api_root: 'https://old:443',
          k8s_client_certificate: '/c.pem',
          k8s_client_key: '/k.pem',
          k8s_certificate_authority: '/ca.pem',
        },
      }),
      'ADD',
    );
    expect(c.kubeApi).toEqual({
      apiRoot: 'https://api:6443',
      clientCertificate: '/c.pem',
      clientKey: '/k.pem',
      certificateAuthority: '/ca.pem',
    });
  });

  it('a kubeconfig that is not a string is code 7 naming the field', () => {
    const e = errorOf(() => parseNetConf(conf({ kubernetes: { kubeconfig: 5 } }), 'ADD'));
    expect(e.code).toBe('invalid-config');
    expect(e.message).toMatch(/^kubernetes\.kubeconfig/);
  });
});

describe('parseNetConf', () => {
  it('reads the 10-calico.conf of a calico v2.6 install unchanged', () => {
    const c = parseNetConf(seed, 'ADD');
    expect(c).toMatchObject({
      cniVersion: '0.1.0',
      name: 'k8s-pod-network',
      type: 'calico',
      mtu: 1500,
      logLevel: 'info',
      policyType: 'k8s',
      ipam: { type: 'calico-ipam', assignIpv4: true, assignIpv6: false, ipv4Pools: [], ipv6Pools: [] },
      nodenameFileOptional: false,
      numQueues: 1,
    });
    expect(c.raw.etcd_endpoints).toBe('https://10.142.21.21:2379');
  });

  it('defaults: no cniVersion means 0.2.0 output, flags are strings or booleans', () => {
    const c = parseNetConf(
      JSON.stringify({
        name: 'n',
        ipam: { type: 'calico-ipam', assign_ipv4: 'false', assign_ipv6: true, ipv6_pools: ['fd00::/48'] },
      }),
      'ADD',
    );
    expect(c.cniVersion).toBe('0.2.0');
    expect(c.ipam).toMatchObject({ assignIpv4: false, assignIpv6: true, ipv6Pools: ['fd00::/48'] });
  });

  it('reads prevResult in the config version', () => {
    const c = parseNetConf(
      conf({
        cniVersion: '0.3.1',
        prevResult: { ips: [{ version: '4', address: '10.0.0.2/24', gateway: '10.0.0.1' }] },
      }),
      'ADD',
    );
    expect(c.prevResult?.ips).toEqual([{ address: '10.0.0.2/24', gateway: '10.0.0.1' }]);
  });

  it('GC reads cni.dev/valid-attachments (or cni.dev/attachments)', () => {
    const attachments = [{ containerID: 'a', ifname: 'eth0' }];
    expect(
      parseNetConf(conf({ cniVersion: '1.1.0', 'cni.dev/valid-attachments': attachments }), 'GC')
        .validAttachments,
    ).toEqual(attachments);
    expect(
      parseNetConf(conf({ cniVersion: '1.1.0', 'cni.dev/attachments': attachments }), 'GC').validAttachments,
    ).toEqual(attachments);
  });

  it('log levels: upstream’s names, anything else is info', () => {
    expect(parseNetConf(conf({ log_level: 'DEBUG' }), 'ADD').logLevel).toBe('debug');
    expect(parseNetConf(conf({ log_level: 'Warning' }), 'ADD').logLevel).toBe('warning');
    expect(parseNetConf(conf({ log_level: 'verbose' }), 'ADD').logLevel).toBe('info');
  });

  it.each([
    ['', 'decode-failed', 'no network config on stdin'],
    ['   \n', 'decode-failed', 'no network config on stdin'],
    ['{"name": ', 'decode-failed', 'not valid JSON'],
    ['[1,2]', 'decode-failed', 'must be a JSON object, not a list'],
    ['"calico"', 'decode-failed', 'must be a JSON object, not string'],
    ['null', 'decode-failed', 'must be a JSON object, not null'],
    [conf({ cniVersion: '0.5.0' }), 'incompatible-version', 'config is "0.5.0"'],
    [conf({ cniVersion: 1 }), 'invalid-config', 'cniVersion must be a string'],
    [conf({ name: undefined }), 'invalid-config', 'name: missing'],
    [conf({ name: 7 }), 'invalid-config', 'name: must be a string, not number 7'],
    [conf({ name: 'bad name' }), 'invalid-config', 'name: "bad name" has invalid characters'],
    [conf({ name: '-net' }), 'invalid-config', 'name: "-net" has invalid characters'],
    [conf({ mtu: '1500' }), 'invalid-config', 'mtu: must be a non-negative integer, not string "1500"'],
    [conf({ mtu: 20 }), 'invalid-config', 'mtu: must be 0 (automatic) or between 68 and 65535, not 20'],
    [conf({ mtu: 1500.5 }), 'invalid-config', 'mtu: must be a non-negative integer'],
    [conf({ num_queues: -1 }), 'invalid-config', 'num_queues: must be a non-negative integer'],
    [conf({ ipam: 'calico-ipam' }), 'invalid-config', 'ipam: must be an object, not string'],
    [conf({ ipam: {} }), 'invalid-config', 'ipam.type: missing'],
    [
      conf({ ipam: { type: '../../bin/sh' } }),
      'invalid-config',
      'ipam.type: must be a plugin name, not a path',
    ],
    [
      conf({ ipam: { type: 'calico-ipam', assign_ipv4: 'yes' } }),
      'invalid-config',
      'ipam.assign_ipv4: must be "true" or "false", not string "yes"',
    ],
    [
      conf({ ipam: { type: 'calico-ipam', ipv4_pools: '198.19.0.0/16' } }),
      'invalid-config',
      'ipam.ipv4_pools: must be a list',
    ],
    [
      conf({ ipam: { type: 'calico-ipam', ipv6_pools: [1] } }),
      'invalid-config',
      'ipam.ipv6_pools[0]: must be a string',
    ],
    [conf({ policy: 'k8s' }), 'invalid-config', 'policy: must be an object'],
    [conf({ policy: { type: true } }), 'invalid-config', 'policy.type: must be a string'],
    [conf({ kubernetes: { kubeconfig: 5 } }), 'invalid-config', 'kubernetes.kubeconfig: must be a string'],
    [
      conf({ datastore_type: 'etcdv2' }),
      'invalid-config',
      'datastore_type: must be "etcdv3" or "kubernetes", not "etcdv2"',
    ],
    [
      conf({ etcd_endpoints: ['http://x'] }),
      'invalid-config',
      'etcd_endpoints: must be a string, not a list',
    ],
    [conf({ nodename: 1 }), 'invalid-config', 'nodename: must be a string'],
    [conf({ service_socket: 1 }), 'invalid-config', 'service_socket: must be a string'],
    [
      conf({ nodename_file_optional: 'true' }),
      'invalid-config',
      'nodename_file_optional: must be true or false',
    ],
    [
      conf({ container_settings: { allow_ip_forwarding: 1 } }),
      'invalid-config',
      'container_settings.allow_ip_forwarding: must be true or false',
    ],
    [conf({ feature_control: [] }), 'invalid-config', 'feature_control: must be an object, not a list'],
    [conf({ log_level: 3 }), 'invalid-config', 'log_level: must be a string'],
    [conf({ prevResult: { ips: [{ address: 'nope' }] } }), 'invalid-config', 'prevResult.ips[0].address'],
  ])('%s → %s', (stdin, code, msg) => {
    const e = errorOf(() => parseNetConf(stdin, 'ADD'));
    expect(e.code).toBe(code);
    expect(e.message).toContain(msg);
  });

  it('CHECK needs 0.4.0, GC and STATUS 1.1.0 (code 1)', () => {
    expect(errorOf(() => parseNetConf(conf({ cniVersion: '0.3.1' }), 'CHECK')).message).toContain(
      'does not allow CHECK',
    );
    expect(errorOf(() => parseNetConf(conf({ cniVersion: '1.0.0' }), 'GC')).code).toBe(
      'incompatible-version',
    );
    expect(errorOf(() => parseNetConf(conf({ cniVersion: '1.0.0' }), 'STATUS')).code).toBe(
      'incompatible-version',
    );
  });

  it('GC without the attachment list is refused rather than treated as "nothing is valid"', () => {
    const e = errorOf(() => parseNetConf(conf({ cniVersion: '1.1.0' }), 'GC'));
    expect(e.code).toBe('invalid-config');
    expect(e.message).toContain('cni.dev/valid-attachments: missing');
  });

  it('VERSION reads the requested version leniently', () => {
    expect(versionRequestVersion('{"cniVersion":"0.4.0"}')).toBe('0.4.0');
    expect(versionRequestVersion('')).toBeUndefined();
    expect(versionRequestVersion('garbage')).toBeUndefined();
  });
});
