import { describe, expect, it } from 'vitest';
import { parseCalicoctlConfig } from './calicoctl-config.js';
import {
  type ClientConfig,
  type ConfigOrigin,
  mergeClientConfig,
  resolveClientConfig,
  validateClientConfig,
} from './client-config.js';
import { configFromEnv } from './env-config.js';

const FILE: ConfigOrigin = { kind: 'file', path: '/etc/calico/calicoctl.cfg' };
const ENV: ConfigOrigin = { kind: 'env' };

describe('mergeClientConfig', () => {
  const file = parseCalicoctlConfig(
    'apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nspec:\n  etcdEndpoints: http://198.18.0.1:2379\n',
    '/etc/calico/calicoctl.cfg',
  ).config;
  const env = configFromEnv({ DATASTORE_TYPE: 'kubernetes', KUBECONFIG: '/kc', ETCD_USERNAME: 'u' }).config;

  it('uses a config file whole: the environment does not override it (upstream calicoctl)', () => {
    expect(mergeClientConfig(file, env).config).toEqual({
      datastoreType: 'etcdv3',
      etcdEndpoints: ['http://198.18.0.1:2379'],
    });
  });

  it('uses the environment when there is no file', () => {
    expect(mergeClientConfig(undefined, env).config).toEqual({
      datastoreType: 'kubernetes',
      etcdEndpoints: [],
      kubeconfig: '/kc',
      etcdUsername: 'u',
    });
  });

  it('names fields the way the chosen source spells them', () => {
    const bad = { etcdEndpoints: ['198.18.0.1:2379'] };
    expect(() => mergeClientConfig(bad, {}, { filePath: '/tmp/c.cfg' })).toThrow(
      '/tmp/c.cfg: spec.etcdEndpoints entry "198.18.0.1:2379" is not a URL with a scheme; write it like https://10.0.0.1:2379',
    );
    expect(() => mergeClientConfig(undefined, bad)).toThrow(
      'environment: ETCD_ENDPOINTS entry "198.18.0.1:2379" is not a URL with a scheme; write it like https://10.0.0.1:2379',
    );
  });
});

describe('resolveClientConfig defaults', () => {
  it('defaults the kubeconfig only for kubernetes without kubeconfig or API endpoint', () => {
    const home = '/home/u/.kube/config';
    expect(resolveClientConfig({}, { origin: ENV, defaultKubeconfig: home }).config.kubeconfig).toBe(home);
    expect(resolveClientConfig({}, { origin: ENV }).config.kubeconfig).toBeUndefined();
    expect(
      resolveClientConfig(
        { k8sAPIEndpoint: 'https://198.18.0.9:6443' },
        { origin: ENV, defaultKubeconfig: home },
      ).config.kubeconfig,
    ).toBeUndefined();
    expect(
      resolveClientConfig({ kubeconfig: '/kc' }, { origin: ENV, defaultKubeconfig: home }).config.kubeconfig,
    ).toBe('/kc');
    expect(
      resolveClientConfig({ datastoreType: 'memory' }, { origin: ENV, defaultKubeconfig: home }).config,
    ).toEqual({ datastoreType: 'memory', etcdEndpoints: [] });
  });

  it('warns when only a discovery domain is given, since the default is then kubernetes', () => {
    const { config, warnings } = resolveClientConfig({ etcdDiscoverySrv: 'example.com' }, { origin: ENV });
    expect(config.datastoreType).toBe('kubernetes');
    expect(warnings).toEqual([
      'environment: ETCD_DISCOVERY_SRV is set but DATASTORE_TYPE is not; the default is kubernetes unless ' +
        'ETCD_ENDPOINTS is set, so set the datastore type to etcdv3',
    ]);
  });
});

describe('validateClientConfig', () => {
  const etcd = (extra: Partial<ClientConfig>): ClientConfig => ({
    datastoreType: 'etcdv3',
    etcdEndpoints: ['https://198.18.0.1:2379'],
    ...extra,
  });
  const k8s = (extra: Partial<ClientConfig>): ClientConfig => ({
    datastoreType: 'kubernetes',
    etcdEndpoints: [],
    ...extra,
  });
  const P = '/etc/calico/calicoctl.cfg: ';

  it.each<[string, ClientConfig, ConfigOrigin, string]>([
    [
      'unknown datastore type',
      etcd({ datastoreType: 'etcdv4' as never }),
      FILE,
      `${P}spec.datastoreType "etcdv4" is not supported; use one of etcdv3, kubernetes, memory`,
    ],
    [
      'endpoint with an unsupported scheme',
      etcd({ etcdEndpoints: ['unix:///run/etcd.sock'] }),
      FILE,
      `${P}spec.etcdEndpoints entry "unix:///run/etcd.sock" has scheme "unix"; only http and https are supported`,
    ],
    [
      'endpoint with a bad port',
      etcd({ etcdEndpoints: ['http://198.18.0.1:99999'] }),
      ENV,
      'environment: ETCD_ENDPOINTS entry "http://198.18.0.1:99999" is not a valid URL; write it like https://10.0.0.1:2379',
    ],
    [
      'endpoint with a path',
      etcd({ etcdEndpoints: ['http://198.18.0.1:2379/v2/keys'] }),
      FILE,
      `${P}spec.etcdEndpoints entry "http://198.18.0.1:2379/v2/keys" must not have a path, query or fragment; give only scheme, host and port`,
    ],
    [
      'endpoint with credentials',
      etcd({ etcdEndpoints: ['https://root:pw@198.18.0.1:2379'] }),
      FILE,
      `${P}spec.etcdEndpoints entry "https://root:pw@198.18.0.1:2379" must not carry credentials; set the etcd username and password fields instead`,
    ],
    [
      'endpoints mixing http and https',
      etcd({ etcdEndpoints: ['https://198.18.0.1:2379', 'http://198.18.0.2:2379'] }),
      FILE,
      `${P}spec.etcdEndpoints mixes http and https endpoints; use one scheme for all`,
    ],
    [
      'etcdv3 with no endpoints',
      etcd({ etcdEndpoints: [] }),
      ENV,
      'environment: datastore type etcdv3 needs ETCD_ENDPOINTS (or ETCD_DISCOVERY_SRV)',
    ],
    [
      'endpoints and discovery together',
      etcd({ etcdDiscoverySrv: 'example.com' }),
      FILE,
      `${P}spec.etcdEndpoints and spec.etcdDiscoverySrv are both set; use one of them`,
    ],
    [
      'discovery domain that is a URL',
      etcd({ etcdEndpoints: [], etcdDiscoverySrv: 'https://example.com' }),
      FILE,
      `${P}spec.etcdDiscoverySrv "https://example.com" is not a DNS domain name (e.g. example.com)`,
    ],
    [
      'key file without cert file',
      etcd({ etcdKeyFile: '/k.pem' }),
      FILE,
      `${P}spec.etcdKeyFile is set but spec.etcdCertFile is not; a client key needs its certificate`,
    ],
    [
      'cert file without key file',
      etcd({ etcdCertFile: '/c.pem' }),
      ENV,
      'environment: ETCD_CERT_FILE is set but ETCD_KEY_FILE is not; a client certificate needs its key',
    ],
    [
      'inline key mixed with files',
      etcd({ etcdKey: 'PEM', etcdCert: 'PEM', etcdCACertFile: '/ca.pem' }),
      FILE,
      `${P}inline spec.etcdKey/spec.etcdCert/spec.etcdCACert cannot be mixed with spec.etcdKeyFile/spec.etcdCertFile/spec.etcdCACertFile; use one kind`,
    ],
    [
      'inline key without inline cert',
      etcd({ etcdKey: 'PEM' }),
      FILE,
      `${P}spec.etcdKey is set but spec.etcdCert is not; a client key needs its certificate`,
    ],
    [
      'username without password',
      etcd({ etcdUsername: 'calico' }),
      ENV,
      'environment: ETCD_USERNAME is set but ETCD_PASSWORD is not; etcd authentication needs both',
    ],
    [
      'password without username',
      etcd({ etcdPassword: 'pw' }),
      { kind: 'object' },
      'client config: etcdPassword is set but etcdUsername is not; etcd authentication needs both',
    ],
    [
      'k8s API endpoint without a scheme',
      k8s({ k8sAPIEndpoint: '198.18.0.9:6443' }),
      { kind: 'cni' },
      'CNI network config: kubernetes.k8s_api_root "198.18.0.9:6443" is not a URL with a scheme; write it like https://10.0.0.1:6443',
    ],
    [
      'k8s key without cert',
      k8s({ k8sKeyFile: '/k' }),
      ENV,
      'environment: K8S_KEY_FILE is set but K8S_CERT_FILE is not; a client key needs its certificate',
    ],
    [
      'unknown Calico API group',
      k8s({ calicoAPIGroup: 'projectcalico.org/v1' }),
      ENV,
      'environment: CALICO_API_GROUP "projectcalico.org/v1" is not one of crd.projectcalico.org/v1, projectcalico.org/v3',
    ],
    [
      'negative client QPS',
      k8s({ k8sClientQPS: -1 }),
      FILE,
      `${P}spec.k8sClientQPS must be a non-negative number, not -1`,
    ],
  ])('rejects %s', (_name, cfg, origin, message) => {
    expect(() => validateClientConfig(cfg, origin)).toThrowError(
      expect.objectContaining({ code: 'config', message }),
    );
  });

  it('accepts valid configurations', () => {
    expect(() =>
      validateClientConfig(
        etcd({
          etcdEndpoints: ['https://198.18.0.1:2379', 'https://[2001:db8::1]:2379', 'https://etcd-0.example'],
          etcdKeyFile: '/k',
          etcdCertFile: '/c',
          etcdCACertFile: '/ca',
          etcdUsername: 'u',
          etcdPassword: 'p',
        }),
      ),
    ).not.toThrow();
    expect(() =>
      validateClientConfig(etcd({ etcdEndpoints: [], etcdDiscoverySrv: 'etcd.example.com' })),
    ).not.toThrow();
    expect(() => validateClientConfig(etcd({ etcdCACert: 'PEM' }))).not.toThrow();
    expect(() =>
      validateClientConfig(k8s({ k8sAPIEndpoint: 'https://198.18.0.9:6443/prefix' })),
    ).not.toThrow();
    // etcd fields are not checked when the datastore is not etcd.
    expect(() => validateClientConfig(k8s({ etcdKeyFile: '/k' }))).not.toThrow();
    expect(() => validateClientConfig({ datastoreType: 'memory', etcdEndpoints: [] })).not.toThrow();
  });
});
