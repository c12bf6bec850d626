import { describe, expect, it } from 'vitest';
import { parseCalicoctlConfig } from './calicoctl-config.js';
import { mergeClientConfig } from './client-config.js';

// The calicoctl 1.x example (Calico 2.6 era), byte for byte as operators wrote it.
const V1_SEED = `apiVersion: v1
kind: calicoApiConfig
metadata:
spec:
  datastoreType: "etcdv2"
  etcdEndpoints: "https://10.142.232.21:2379,https://10.142.232.22:2379,https://10.142.232.23:2379"
  etcdKeyFile: "/etc/calico/certs/key.pem"
  etcdCertFile: "/etc/calico/certs/cert.crt"
  etcdCACertFile: "/etc/calico/certs/ca_cert.crt"
`;

const V3 = `apiVersion: projectcalico.org/v3
kind: CalicoAPIConfig
metadata: {}
spec:
  datastoreType: etcdv3          # or kubernetes
  etcdEndpoints: https://10.0.0.1:2379
  etcdKeyFile: /etc/calico/key.pem
  etcdCertFile: /etc/calico/cert.pem
  etcdCACertFile: /etc/calico/ca.pem
`;

const SRC = '/etc/calico/calicoctl.cfg';

describe('parseCalicoctlConfig', () => {
  it('reads the v3 form', () => {
    expect(parseCalicoctlConfig(V3, SRC)).toEqual({
      config: {
        datastoreType: 'etcdv3',
        etcdEndpoints: ['https://10.0.0.1:2379'],
        etcdKeyFile: '/etc/calico/key.pem',
        etcdCertFile: '/etc/calico/cert.pem',
        etcdCACertFile: '/etc/calico/ca.pem',
      },
      warnings: [],
    });
  });

  it('reads the v1 form, mapping etcdv2 to etcdv3 with a warning and splitting the quoted endpoint list', () => {
    const { config, warnings } = parseCalicoctlConfig(V1_SEED, SRC);
    expect(config).toEqual({
      datastoreType: 'etcdv3',
      etcdEndpoints: [
        'https://10.142.232.21:2379',
        'https://10.142.232.22:2379',
        'https://10.142.232.23:2379',
      ],
      etcdKeyFile: '/etc/calico/certs/key.pem',
      etcdCertFile: '/etc/calico/certs/cert.crt',
      etcdCACertFile: '/etc/calico/certs/ca_cert.crt',
    });
    expect(warnings).toEqual([
      '/etc/calico/calicoctl.cfg: spec.datastoreType: datastore type "etcdv2" is no longer supported; ' +
        'using etcdv3 (the etcd v3 API of the same cluster)',
    ]);
    // And it resolves to a valid configuration.
    expect(mergeClientConfig(config, {}, { filePath: SRC }).config.datastoreType).toBe('etcdv3');
  });

  it('reads the JSON form of the v3 config', () => {
    const json = JSON.stringify({
      apiVersion: 'projectcalico.org/v3',
      kind: 'CalicoAPIConfig',
      spec: { datastoreType: 'kubernetes', kubeconfig: '/root/.kube/config', k8sInsecureSkipTLSVerify: true },
    });
    expect(parseCalicoctlConfig(json, SRC).config).toEqual({
      datastoreType: 'kubernetes',
      kubeconfig: '/root/.kube/config',
      k8sInsecureSkipTLSVerify: true,
    });
  });

  it('matches spec keys case-insensitively, as Go JSON decoding does', () => {
    const text =
      'apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nspec:\n  EtcdEndpoints: http://a:2379\n';
    expect(parseCalicoctlConfig(text, SRC).config).toEqual({ etcdEndpoints: ['http://a:2379'] });
  });

  it('keeps inline PEM and the Kubernetes-only fields', () => {
    const text = `apiVersion: projectcalico.org/v3
kind: CalicoAPIConfig
spec:
  etcdEndpoints: https://a:2379
  etcdKey: |
    -----BEGIN PRIVATE KEY-----
    abc
    -----END PRIVATE KEY-----
  etcdCert: CERT
  k8sClientQPS: 50
  usePodCIDR: true
  calicoAPIGroup: projectcalico.org/v3
`;
    expect(parseCalicoctlConfig(text, SRC).config).toEqual({
      etcdEndpoints: ['https://a:2379'],
      etcdKey: '-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n',
      etcdCert: 'CERT',
      k8sClientQPS: 50,
      k8sUsePodCIDR: true,
      calicoAPIGroup: 'projectcalico.org/v3',
    });
  });

  it('builds the v1 default endpoint from etcdScheme and etcdAuthority', () => {
    const text =
      'apiVersion: v1\nkind: calicoApiConfig\nspec:\n  etcdScheme: https\n  etcdAuthority: etcd.example:2379\n';
    expect(parseCalicoctlConfig(text, SRC).config).toEqual({
      datastoreType: 'etcdv3',
      etcdEndpoints: ['https://etcd.example:2379'],
    });
    const bare = 'apiVersion: v1\nkind: calicoApiConfig\nmetadata:\nspec:\n';
    expect(parseCalicoctlConfig(bare, SRC).config.etcdEndpoints).toEqual(['http://127.0.0.1:2379']);
  });

  it('warns about, but does not reject, v1 keys it does not know', () => {
    const text = 'apiVersion: v1\nkind: calicoApiConfig\nspec:\n  datastoreType: kubernetes\n  k8sFoo: 1\n';
    expect(parseCalicoctlConfig(text, SRC)).toEqual({
      config: { datastoreType: 'kubernetes' },
      warnings: ['/etc/calico/calicoctl.cfg: ignoring spec.k8sFoo, which this version does not use'],
    });
  });

  const HEAD = 'apiVersion: projectcalico.org/v3\nkind: CalicoAPIConfig\nspec:\n';
  it.each([
    [
      `${HEAD}  etcdEndpoint: http://a:2379\n`,
      '/etc/calico/calicoctl.cfg: unknown field "spec.etcdEndpoint"',
    ],
    [
      `${HEAD}  etcdEndpoints: [http://a:2379]\n`,
      '/etc/calico/calicoctl.cfg: spec.etcdEndpoints must be a string (a comma-separated list in one string), not a list',
    ],
    [
      `${HEAD}  k8sInsecureSkipTLSVerify: "yes"\n`,
      '/etc/calico/calicoctl.cfg: spec.k8sInsecureSkipTLSVerify must be a boolean, not string "yes"',
    ],
    [
      'apiVersion: projectcalico.org/v2\nkind: CalicoAPIConfig\n',
      '/etc/calico/calicoctl.cfg: unknown apiVersion "projectcalico.org/v2"; expected "projectcalico.org/v3" (or the older "v1")',
    ],
    [
      'apiVersion: projectcalico.org/v3\nkind: calicoApiConfig\n',
      '/etc/calico/calicoctl.cfg: expected kind "CalicoAPIConfig", got "calicoApiConfig"',
    ],
    [
      'kind: CalicoAPIConfig\n',
      '/etc/calico/calicoctl.cfg: unknown apiVersion nothing; expected "projectcalico.org/v3" (or the older "v1")',
    ],
    [`${HEAD.replace('spec:\n', 'spec: etcdv3\n')}`, '/etc/calico/calicoctl.cfg: spec must be a mapping'],
    [
      `${HEAD}  etcdEndpoints: a\n  etcdEndpoints: b\n`,
      '/etc/calico/calicoctl.cfg: not valid YAML or JSON (line 5): Map keys must be unique',
    ],
    ['- a\n- b\n', '/etc/calico/calicoctl.cfg: expected a mapping with apiVersion, kind, metadata and spec'],
    [
      `${HEAD}status: {}\n`,
      '/etc/calico/calicoctl.cfg: unknown field "status" (expected apiVersion, kind, metadata, spec)',
    ],
  ])('rejects %j', (text, message) => {
    expect(() => parseCalicoctlConfig(text, SRC)).toThrowError(
      expect.objectContaining({ code: 'config', message }),
    );
  });
});
