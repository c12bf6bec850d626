import { describe, expect, it } from 'vitest';
import { configFromEnv, placeholderValues } from './config.js';
import { isInstallError } from './errors.js';
import { DEFAULT_NETWORK_CONFIG, renderKubeconfig, renderNetworkConfig } from './render.js';

const facts = { token: 'tok', tlsFiles: new Set<'etcd-ca' | 'etcd-cert' | 'etcd-key'>() };

describe('configFromEnv', () => {
  it('takes upstream defaults', () => {
    const c = configFromEnv({ KUBERNETES_NODE_NAME: 'n1' });
    expect(c).toMatchObject({
      oldConfName: '10-calico.conflist',
      cniNetDir: '/etc/cni/net.d',
      updateBinaries: true,
      sleep: true,
      tlsAssetsDir: '/calico-secrets',
      serviceAccount: 'calico-cni-plugin',
      tokenValiditySeconds: 86400,
      nodeName: 'n1',
    });
    expect(c.apiServer).toBeUndefined();
    expect([...c.skipBinaries]).toEqual([]);
  });

  it('reads the in-pod API server, skip list and switches', () => {
    const c = configFromEnv({
      KUBERNETES_SERVICE_HOST: 'fd00::1',
      KUBERNETES_SERVICE_PORT: '6443',
      SKIP_CNI_BINARIES: 'flannel, portmap,',
      UPDATE_CNI_BINARIES: 'false',
      SLEEP: 'false',
      CNI_NET_DIR: '/var/lib/cni/net.d/',
    });
    expect(c.apiServer).toBe('https://[fd00::1]:6443');
    expect([...c.skipBinaries]).toEqual(['flannel', 'portmap']);
    expect(c.updateBinaries).toBe(false);
    expect(c.sleep).toBe(false);
    expect(c.cniNetDir).toBe('/var/lib/cni/net.d');
  });

  it('names the variable that is wrong', () => {
    expect(() => configFromEnv({ SLEEP: 'maybe' })).toThrow(/SLEEP must be true or false, got "maybe"/);
    expect(() => configFromEnv({ CNI_CONF_NAME: '../10-calico.conflist' })).toThrow(
      /CNI_CONF_NAME must be a file name/,
    );
    expect(() => configFromEnv({ CNI_TOKEN_VALIDITY_SECONDS: '60' })).toThrow(/at least 600/);
  });
});

describe('renderNetworkConfig', () => {
  it('fills every placeholder of the built-in config', () => {
    const env = { KUBERNETES_NODE_NAME: 'node-a', CNI_MTU: '1440', LOG_LEVEL: 'debug' };
    const cfg = configFromEnv(env);
    const r = renderNetworkConfig(DEFAULT_NETWORK_CONFIG, placeholderValues(env, cfg, facts), 'built-in');
    expect(r.unknownPlaceholders).toEqual([]);
    const conf = JSON.parse(r.text);
    expect(conf.name).toBe('k8s-pod-network');
    expect(conf.plugins[0]).toMatchObject({
      type: 'calico',
      log_level: 'debug',
      datastore_type: 'kubernetes',
      nodename: 'node-a',
      mtu: 1440,
      ipam: { type: 'calico-ipam' },
      policy: { type: 'k8s' },
      kubernetes: { kubeconfig: '/etc/cni/net.d/calico-kubeconfig' },
    });
    expect(conf.plugins[1]).toEqual({ type: 'portmap', snat: true, capabilities: { portMappings: true } });
  });

  it('renders etcd TLS paths only for the files that were copied', () => {
    const env = { ETCD_ENDPOINTS: 'https://198.18.0.2:2379' };
    const cfg = configFromEnv(env);
    const template =
      '{"type":"calico","etcd_endpoints":"__ETCD_ENDPOINTS__","etcd_key_file":"__ETCD_KEY_FILE__",' +
      '"etcd_cert_file":"__ETCD_CERT_FILE__","etcd_ca_cert_file":"__ETCD_CA_CERT_FILE__"}';
    const v = placeholderValues(env, cfg, { token: '', tlsFiles: new Set(['etcd-ca', 'etcd-cert']) });
    expect(JSON.parse(renderNetworkConfig(template, v, 't').text)).toEqual({
      type: 'calico',
      etcd_endpoints: 'https://198.18.0.2:2379',
      etcd_key_file: '',
      etcd_cert_file: '/etc/cni/net.d/calico-tls/etcd-cert',
      etcd_ca_cert_file: '/etc/cni/net.d/calico-tls/etcd-ca',
    });
  });

  it('refuses a template that is not JSON after substitution, saying where', () => {
    const cfg = configFromEnv({});
    const bad = '{\n  "type": "calico",\n  "mtu": __CNI_MTU__,\n  "x": }';
    let err: unknown;
    try {
      renderNetworkConfig(bad, placeholderValues({}, cfg, facts), 'CNI_NETWORK_CONFIG');
    } catch (e) {
      err = e;
    }
    expect(isInstallError(err, 'config')).toBe(true);
    expect((err as Error).message).toMatch(
      /^CNI_NETWORK_CONFIG is not valid JSON after substitution.*Unexpected token/,
    );
  });

  it('refuses JSON that is no network config', () => {
    expect(() => renderNetworkConfig('[1]', {}, 'X')).toThrow(/X must be a JSON object/);
    expect(() => renderNetworkConfig('{"name":"k"}', {}, 'X')).toThrow(/neither "plugins"/);
  });

  it('reports placeholders nothing fills', () => {
    const r = renderNetworkConfig('{"type":"calico","x":"__NODENAME__"}', {}, 't');
    expect(r.unknownPlaceholders).toEqual(['__NODENAME__']);
  });
});

describe('renderKubeconfig', () => {
  it('embeds the CA, or skips verification when asked', () => {
    const withCa = renderKubeconfig({
      server: 'https://198.18.128.1:443',
      token: 'abc',
      ca: Buffer.from('PEM'),
      skipTlsVerify: false,
    });
    expect(withCa).toContain(`certificate-authority-data: "${Buffer.from('PEM').toString('base64')}"`);
    expect(withCa).toContain('token: "abc"');
    expect(withCa).toContain('current-context: calico-context');
    const skip = renderKubeconfig({ server: 'https://h:1', token: 't', skipTlsVerify: true });
    expect(skip).toContain('insecure-skip-tls-verify: true');
    expect(skip).not.toContain('certificate-authority-data');
  });
});
