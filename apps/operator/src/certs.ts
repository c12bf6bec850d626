/**
 * The Felix ↔ Typha certificates as Kubernetes objects (pure apart from key generation, which
 * x509.ts does in memory): upstream's names and layout.
 *
 *   Secret tigera-operator/tigera-ca-private   the CA's certificate and key (kept; never in
 *                                               calico-system)
 *   ConfigMap calico-system/tigera-ca-bundle   `tigera-ca-bundle.crt`, the CA certificate both sides trust
 *   Secret calico-system/typha-certs           Typha's certificate, CN typha-server
 *   Secret calico-system/node-certs            calico-node's client certificate, CN typha-client
 *   Secret calico-system/calico-apiserver-certs calico-apiserver's serving certificate (with an
 *                                               APIServer), for the names of Service calico-api
 *
 * A leaf is kept while the CA signed it, its CN is right and it has more than 30 days left;
 * otherwise a new one is issued (and the pods roll: their templates carry a hash of the bundle).
 */
import { createHash, X509Certificate } from 'node:crypto';
import { CALICO_NAMESPACE, type KubeObject } from './kube-object.js';
import { issue, type KeyPair, makeCa } from './x509.js';

export const OPERATOR_NAMESPACE = 'tigera-operator';
export const CA_SECRET = 'tigera-ca-private';
export const CA_BUNDLE = 'tigera-ca-bundle';
export const TYPHA_SECRET = 'typha-certs';
export const NODE_SECRET = 'node-certs';
export const APISERVER_SECRET = 'calico-apiserver-certs';
export const APISERVER_CN = 'calico-api.calico-system.svc';
export const TYPHA_CN = 'typha-server';
export const NODE_CN = 'typha-client';
const LEAF_DAYS = 825;
const RENEW_MS = 30 * 86_400_000;

type Obj = Record<string, unknown>;

/** The key pair a `kubernetes.io/tls` Secret holds, or undefined. */
export function pairFromSecret(secret: Obj | undefined): KeyPair | undefined {
  const data = secret?.data as Record<string, string> | undefined;
  if (!data?.['tls.crt'] || !data['tls.key']) return undefined;
  return {
    certPem: Buffer.from(data['tls.crt'], 'base64').toString('utf8'),
    keyPem: Buffer.from(data['tls.key'], 'base64').toString('utf8'),
  };
}

export function tlsSecret(name: string, namespace: string, pair: KeyPair): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    type: 'kubernetes.io/tls',
    data: {
      'tls.crt': Buffer.from(pair.certPem).toString('base64'),
      'tls.key': Buffer.from(pair.keyPem).toString('base64'),
    },
  };
}

/** Is `leaf` still good: signed by `ca`, named `cn`, more than 30 days left? */
export function leafUsable(leaf: KeyPair | undefined, ca: KeyPair, cn: string, now: Date): boolean {
  if (!leaf) return false;
  try {
    const c = new X509Certificate(leaf.certPem);
    return (
      c.checkIssued(new X509Certificate(ca.certPem)) &&
      c.verify(new X509Certificate(ca.certPem).publicKey) &&
      c.subject === `CN=${cn}` &&
      new Date(c.validTo).getTime() - now.getTime() > RENEW_MS
    );
  } catch {
    return false;
  }
}

/** A CA: the stored one while it is usable, else a new one. */
export function caFrom(stored: KeyPair | undefined, now: Date): { ca: KeyPair; created: boolean } {
  if (stored) {
    try {
      const c = new X509Certificate(stored.certPem);
      if (c.ca && new Date(c.validTo).getTime() - now.getTime() > RENEW_MS)
        return { ca: stored, created: false };
    } catch {
      // Not a certificate: make a new CA.
    }
  }
  return { ca: makeCa('tigera-operator-signer', 3650, now), created: true };
}

/** calico-system's certificate objects, reusing `typha` and `node` where they are still good. */
export function certificateObjects(
  ca: KeyPair,
  typha: KeyPair | undefined,
  node: KeyPair | undefined,
  now: Date,
): { objects: KubeObject[]; hash: string } {
  const t = leafUsable(typha, ca, TYPHA_CN, now)
    ? typha!
    : issue(ca, { cn: TYPHA_CN, usage: 'serverAuth', dnsNames: [TYPHA_CN], days: LEAF_DAYS }, now);
  const n = leafUsable(node, ca, NODE_CN, now)
    ? node!
    : issue(ca, { cn: NODE_CN, usage: 'clientAuth', dnsNames: [NODE_CN], days: LEAF_DAYS }, now);
  const hash = createHash('sha1').update(ca.certPem).update(t.certPem).update(n.certPem).digest('hex');
  return {
    hash,
    objects: [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: CA_BUNDLE, namespace: CALICO_NAMESPACE },
        data: { 'tigera-ca-bundle.crt': ca.certPem },
      },
      tlsSecret(TYPHA_SECRET, CALICO_NAMESPACE, t),
      tlsSecret(NODE_SECRET, CALICO_NAMESPACE, n),
    ],
  };
}

/**
 * calico-apiserver's serving certificate for `dnsNames` (the Service's names), reusing `stored`
 * while it is still good, and a hash of it for the pod template.
 */
export function apiServerCertificate(
  ca: KeyPair,
  stored: KeyPair | undefined,
  dnsNames: readonly string[],
  now: Date,
): { secret: KubeObject; hash: string } {
  const pair = leafUsable(stored, ca, APISERVER_CN, now)
    ? stored!
    : issue(ca, { cn: APISERVER_CN, usage: 'serverAuth', dnsNames: [...dnsNames], days: LEAF_DAYS }, now);
  return {
    secret: tlsSecret(APISERVER_SECRET, CALICO_NAMESPACE, pair),
    hash: createHash('sha1').update(ca.certPem).update(pair.certPem).digest('hex'),
  };
}
