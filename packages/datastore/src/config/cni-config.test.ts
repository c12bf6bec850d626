import { describe, expect, it } from 'vitest';
import { resolveClientConfig } from './client-config.js';
import { cniEnvFromNetConf, configFromCniNetConf } from './cni-config.js';

// /etc/cni/net.d/10-calico.conf as written by a Calico 2.6 install (etcd datastore with TLS).
const SEED_10_CALICO_CONF = `{
    "name": "k8s-pod-network",
    "cniVersion": "0.1.0",
    "type": "calico",
    "etcd_endpoints": "https://10.142.21.21:2379",
    "etcd_key_file": "/etc/cni/net.d/calico-tls/etcd-key",
    "etcd_cert_file": "/etc/cni/net.d/calico-tls/etcd-cert",
    "etcd_ca_cert_file": "/etc/cni/net.d/calico-tls/etcd-ca",
    "log_level": "info",
    "mtu": 1500,
    "ipam": {
        "type": "calico-ipam"
    },
    "policy": {
        "type": "k8s",
        "k8s_api_root": "https://10.233.0.1:443",
        "k8s_auth_token": "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50Iiwia3ViZXJuZXRlcy5pby9zZXJ2aWNlYWNjb3VudC9uYW1lc3BhY2UiOiJrdWJlLXN5c3RlbSIsImt1YmVybmV0ZXMuaW8vc2VydmljZWFjY291bnQvc2VjcmV0Lm5hbWUiOiJjYWxpY28tbm9kZS10b2tlbi1qNHg0bSIsImt1YmVybmV0ZXMuaW8vc2VydmljZWFjY291bnQvc2VydmljZS1hY2NvdW50Lm5hbWUiOiJjYWxpY28tbm9kZSIsImt1YmVybmV0ZXMuaW8vc2VydmljZWFjY291bnQvc2VydmljZS1hY2NvdW50LnVpZCI6ImE4N2ZiZjY1LWQzNTctMTFlNy1hZTVkLTAwNTA1Njk0ZWI2YSIsInN1YiI6InN5c3RlbTpzZXJ2aWNlYWNjb3VudDprdWJlLXN5c3RlbTpjYWxpY28tbm9kZSJ9.om9TzY_4uYSx2b0kVooTmlA_xrHlL0vpGd4m6Pxq4s--CwQHQb5yvOy3qtMqpRlQrSliDRSLUi1O5QQXfjWNrbyk206B4F0k9NsZi0s-1ZzNVhwI6hsatXl8NZ0qb4LQ2rulm5uM9ykKwXnGpQyCghtwlcBGqQmY63VrBdZHxD3NeyCJ9HqM8BfhclpfzepN-ADADhNn59m96cSaXPJbogVOoMdntXn9x9kn_VaQn5A-XIBNQDMGrUhz1dWCOFfG3nVlxAbo24UcxurvtX4gWyxlUTrkc195i_cnuTbYlIMfBCgKsnuf9QMryn5EWULC5IMB8hPW9Bm1e8fUIHeMvQ"
    },
    "kubernetes": {
        "kubeconfig": "/etc/cni/net.d/calico-kubeconfig"
    }
}`;

describe('configFromCniNetConf', () => {
  it('maps the 10-calico.conf datastore fields', () => {
    const { config, warnings } = configFromCniNetConf(JSON.parse(SEED_10_CALICO_CONF));
    expect(warnings).toEqual([]);
    expect(config).toEqual({
      etcdEndpoints: ['https://10.142.21.21:2379'],
      etcdKeyFile: '/etc/cni/net.d/calico-tls/etcd-key',
      etcdCertFile: '/etc/cni/net.d/calico-tls/etcd-cert',
      etcdCACertFile: '/etc/cni/net.d/calico-tls/etcd-ca',
      kubeconfig: '/etc/cni/net.d/calico-kubeconfig',
    });
    // No datastore_type: etcd endpoints make it etcdv3.
    expect(resolveClientConfig(config, { origin: { kind: 'cni' } }).config.datastoreType).toBe('etcdv3');
  });

  it('exports exactly the variables upstream sets', () => {
    expect(
      cniEnvFromNetConf({
        datastore_type: 'kubernetes',
        etcd_discovery_srv: 'example.com',
        etcd_scheme: 'https',
        kubernetes: { kubeconfig: '/kc', k8s_api_root: 'https://198.18.0.9:6443' },
      }),
    ).toEqual({
      DATASTORE_TYPE: 'kubernetes',
      ETCD_DISCOVERY_SRV: 'example.com',
      KUBECONFIG: '/kc',
      K8S_API_ENDPOINT: 'https://198.18.0.9:6443',
    });
  });

  it('overrides the plain environment but not the CALICO_-prefixed one', () => {
    const { config } = configFromCniNetConf(
      { etcd_endpoints: 'http://198.18.0.1:2379', kubernetes: { kubeconfig: '/from-netconf' } },
      {
        ETCD_ENDPOINTS: 'http://198.18.0.2:2379',
        KUBECONFIG: '/from-env',
        CALICO_KUBECONFIG: '/from-calico-env',
        ETCD_USERNAME: 'calico',
        ETCD_PASSWORD: 'pw',
      },
    );
    expect(config).toEqual({
      etcdEndpoints: ['http://198.18.0.1:2379'],
      kubeconfig: '/from-calico-env',
      etcdUsername: 'calico',
      etcdPassword: 'pw',
    });
  });

  it('falls back to the environment for fields the network config leaves out', () => {
    expect(
      configFromCniNetConf({ name: 'k8s-pod-network' }, { DATASTORE_TYPE: 'kubernetes' }).config,
    ).toEqual({
      datastoreType: 'kubernetes',
    });
  });

  it('says etcd_scheme is not used', () => {
    expect(
      configFromCniNetConf({ etcd_scheme: 'https', etcd_endpoints: 'https://198.18.0.1:2379' }).warnings,
    ).toEqual(['CNI network config: etcd_scheme is not used; give the full URL in etcd_endpoints']);
  });

  it.each([
    [
      { etcd_endpoints: ['http://a:2379'] },
      'CNI network config: etcd_endpoints must be a string, not object ["http://a:2379"]',
    ],
    [
      { kubernetes: '/kc' },
      'CNI network config: kubernetes must be an object like {"kubeconfig": "/etc/cni/net.d/calico-kubeconfig"}',
    ],
    [
      { kubernetes: { kubeconfig: 1 } },
      'CNI network config: kubernetes.kubeconfig must be a string, not number 1',
    ],
    [[], 'CNI network config: the network config must be a JSON object'],
  ])('rejects %j', (netconf, message) => {
    expect(() => configFromCniNetConf(netconf)).toThrowError(
      expect.objectContaining({ code: 'config', message }),
    );
  });

  it('reports a bad value under its network config name', () => {
    const { config } = configFromCniNetConf({ datastore_type: 'etcd' });
    expect(() => resolveClientConfig(config, { origin: { kind: 'cni' } })).toThrow(
      'CNI network config: datastore_type "etcd" is not supported; use one of etcdv3, kubernetes, memory',
    );
  });
});
