/**
 * How a delegated extension API server learns whom to trust (pure): kube-apiserver publishes it in
 * ConfigMap `kube-system/extension-apiserver-authentication`:
 *
 *   client-ca-file                       CAs of client certificates (user = CN, groups = O)
 *   requestheader-client-ca-file         CAs of the front proxy (the aggregator) certificate
 *   requestheader-allowed-names          JSON list of front-proxy CNs; empty = any CN of that CA
 *   requestheader-username-headers       JSON list, e.g. ["X-Remote-User"]
 *   requestheader-group-headers          JSON list, e.g. ["X-Remote-Group"]
 *   requestheader-extra-headers-prefix   JSON list, e.g. ["X-Remote-Extra-"]
 *
 * The CA bundles are parsed here, so a bad one is reported when it is read, naming the key.
 */
import { X509Certificate } from 'node:crypto';

export const AUTHENTICATION_CONFIGMAP = {
  namespace: 'kube-system',
  name: 'extension-apiserver-authentication',
};

export interface RequestHeaderConfig {
  readonly cas: readonly X509Certificate[];
  readonly caPem: string;
  readonly allowedNames: readonly string[];
  readonly usernameHeaders: readonly string[];
  readonly groupHeaders: readonly string[];
  readonly extraHeaderPrefixes: readonly string[];
}

export interface AuthenticationConfig {
  readonly clientCas: readonly X509Certificate[];
  readonly clientCaPem: string;
  /** Absent when kube-apiserver runs without the aggregation layer's request headers. */
  readonly requestHeader?: RequestHeaderConfig;
}

/** Every certificate of a PEM bundle. */
export function parseBundle(pem: string, what: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error(`${what} holds no PEM certificate`);
  return blocks.map((b, i) => {
    try {
      return new X509Certificate(b);
    } catch (e) {
      throw new Error(`${what}: certificate ${i + 1} does not parse: ${(e as Error).message}`);
    }
  });
}

function stringList(data: Readonly<Record<string, string>>, key: string): string[] {
  const text = data[key];
  if (text === undefined || text.trim() === '') return [];
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new Error(`${key} is not a JSON list: ${JSON.stringify(text)}`);
  }
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    throw new Error(`${key} is not a JSON list of strings: ${JSON.stringify(text)}`);
  }
  return v as string[];
}

/** The trust configuration in the ConfigMap's data; throws naming a key that is wrong. */
export function authenticationConfigFrom(data: Readonly<Record<string, string>>): AuthenticationConfig {
  const clientCaPem = data['client-ca-file'] ?? '';
  const clientCas = clientCaPem.trim() === '' ? [] : parseBundle(clientCaPem, 'client-ca-file');
  const rhPem = data['requestheader-client-ca-file'] ?? '';
  if (rhPem.trim() === '') return { clientCas, clientCaPem };
  return {
    clientCas,
    clientCaPem,
    requestHeader: {
      cas: parseBundle(rhPem, 'requestheader-client-ca-file'),
      caPem: rhPem,
      allowedNames: stringList(data, 'requestheader-allowed-names'),
      usernameHeaders: stringList(data, 'requestheader-username-headers'),
      groupHeaders: stringList(data, 'requestheader-group-headers'),
      extraHeaderPrefixes: stringList(data, 'requestheader-extra-headers-prefix'),
    },
  };
}

/** Every CA a client certificate may chain to (the TLS server's `ca`), deduplicated. */
export function trustedCaPems(c: AuthenticationConfig): string[] {
  const all = [...c.clientCas, ...(c.requestHeader?.cas ?? [])];
  const seen = new Set<string>();
  return all
    .filter((x) => !seen.has(x.fingerprint256) && seen.add(x.fingerprint256))
    .map((x) => x.toString());
}
