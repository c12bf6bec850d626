import { describe, expect, it } from 'vitest';
import { mergeClientConfig } from './client-config.js';
import { configFromEnv } from './env-config.js';

describe('configFromEnv', () => {
  it('reads every documented variable', () => {
    const { config, warnings } = configFromEnv({
      DATASTORE_TYPE: 'etcdv3',
      ETCD_ENDPOINTS: 'https://198.18.0.1:2379, https://198.18.0.2:2379',
      ETCD_USERNAME: 'calico',
      ETCD_PASSWORD: 's3cret',
      ETCD_KEY_FILE: '/k.pem',
      ETCD_CERT_FILE: '/c.pem',
      ETCD_CA_CERT_FILE: '/ca.pem',
      KUBECONFIG: '/kc',
      K8S_API_ENDPOINT: 'https://198.18.0.9:6443',
      K8S_KEY_FILE: '/kk',
      K8S_CERT_FILE: '/kc.pem',
      K8S_CA_FILE: '/kca',
      K8S_INSECURE_SKIP_TLS_VERIFY: 'true',
      CALICO_API_GROUP: 'projectcalico.org/v3',
      PATH: '/usr/bin',
    });
    expect(warnings).toEqual([]);
    expect(config).toEqual({
      datastoreType: 'etcdv3',
      etcdEndpoints: ['https://198.18.0.1:2379', 'https://198.18.0.2:2379'],
      etcdUsername: 'calico',
      etcdPassword: 's3cret',
      etcdKeyFile: '/k.pem',
      etcdCertFile: '/c.pem',
      etcdCACertFile: '/ca.pem',
      kubeconfig: '/kc',
      k8sAPIEndpoint: 'https://198.18.0.9:6443',
      k8sKeyFile: '/kk',
      k8sCertFile: '/kc.pem',
      k8sCAFile: '/kca',
      k8sInsecureSkipTLSVerify: true,
      calicoAPIGroup: 'projectcalico.org/v3',
    });
  });

  it('lets the CALICO_-prefixed form win over the plain one', () => {
    const { config } = configFromEnv({
      ETCD_ENDPOINTS: 'http://198.18.0.1:2379',
      CALICO_ETCD_ENDPOINTS: 'http://198.18.0.2:2379',
      DATASTORE_TYPE: 'kubernetes',
      CALICO_DATASTORE_TYPE: 'etcdv3',
      ETCD_DISCOVERY_SRV: 'example.com',
    });
    expect(config).toEqual({
      datastoreType: 'etcdv3',
      etcdEndpoints: ['http://198.18.0.2:2379'],
      etcdDiscoverySrv: 'example.com',
    });
  });

  it('treats a prefixed variable set to empty as hiding the plain one, and empty values as unset', () => {
    expect(configFromEnv({ CALICO_KUBECONFIG: '', KUBECONFIG: '/kc', ETCD_USERNAME: '' }).config).toEqual({});
  });

  it('has no environment form for inline PEM', () => {
    expect(configFromEnv({ ETCD_KEY: 'PEM', ETCD_CERT: 'PEM', ETCD_CA_CERT: 'PEM' }).config).toEqual({});
  });

  it('accepts Go boolean spellings and reads etcdv2 as etcdv3 with a warning', () => {
    const { config, warnings } = configFromEnv({
      K8S_INSECURE_SKIP_TLS_VERIFY: 'F',
      CALICO_DATASTORE_TYPE: 'etcdv2',
    });
    expect(config).toEqual({ k8sInsecureSkipTLSVerify: false, datastoreType: 'etcdv3' });
    expect(warnings).toEqual([
      'environment: CALICO_DATASTORE_TYPE: datastore type "etcdv2" is no longer supported; using etcdv3 (the etcd v3 API of the same cluster)',
    ]);
  });

  it('warns that ETCD_SCHEME and ETCD_AUTHORITY are no longer read', () => {
    expect(configFromEnv({ ETCD_AUTHORITY: '198.18.0.1:2379' }).warnings).toEqual([
      'environment: ETCD_AUTHORITY is no longer read; give the full URL in ETCD_ENDPOINTS',
    ]);
  });

  it('rejects a boolean it cannot read, naming the variable used', () => {
    expect(() => configFromEnv({ CALICO_K8S_INSECURE_SKIP_TLS_VERIFY: 'yes' })).toThrowError(
      expect.objectContaining({
        code: 'config',
        message: 'environment: CALICO_K8S_INSECURE_SKIP_TLS_VERIFY="yes" is not a boolean; use true or false',
      }),
    );
  });

  it('resolves env-only to etcdv3 when endpoints are set, else kubernetes', () => {
    const etcd = mergeClientConfig(
      undefined,
      configFromEnv({ ETCD_ENDPOINTS: 'http://198.18.0.1:2379' }).config,
    );
    expect(etcd.config).toEqual({ datastoreType: 'etcdv3', etcdEndpoints: ['http://198.18.0.1:2379'] });
    const k8s = mergeClientConfig(undefined, configFromEnv({}).config, {
      defaultKubeconfig: '/root/.kube/config',
    });
    expect(k8s.config).toEqual({
      datastoreType: 'kubernetes',
      etcdEndpoints: [],
      kubeconfig: '/root/.kube/config',
    });
  });
});
