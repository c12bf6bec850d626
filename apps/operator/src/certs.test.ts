import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { caFrom, certificateObjects, leafUsable, pairFromSecret } from './certs.js';
import { issue, makeCa } from './x509.js';

const now = new Date('2026-06-01T00:00:00Z');
const secretPair = (objs: { metadata: { name: string } }[], name: string) =>
  pairFromSecret(objs.find((o) => o.metadata.name === name) as unknown as Record<string, unknown>);

describe('certificates', () => {
  const { ca } = caFrom(undefined, now);

  it('issues Typha’s and calico-node’s certificates from the CA, with upstream’s CNs', () => {
    const { objects } = certificateObjects(ca, undefined, undefined, now);
    const typha = new X509Certificate(secretPair(objects, 'typha-certs')!.certPem);
    const node = new X509Certificate(secretPair(objects, 'node-certs')!.certPem);
    expect(typha.subject).toBe('CN=typha-server');
    expect(node.subject).toBe('CN=typha-client');
    expect(typha.checkIssued(new X509Certificate(ca.certPem))).toBe(true);
    const bundle = objects.find((o) => o.metadata.name === 'tigera-ca-bundle') as unknown as {
      data: Record<string, string>;
    };
    expect(bundle.data['tigera-ca-bundle.crt']).toBe(ca.certPem);
  });

  it('keeps good leaves (same objects, same hash) and replaces those of another CA or near expiry', () => {
    const first = certificateObjects(ca, undefined, undefined, now);
    const t = secretPair(first.objects, 'typha-certs');
    const n = secretPair(first.objects, 'node-certs');
    const again = certificateObjects(ca, t, n, now);
    expect(again.hash).toBe(first.hash);
    expect(again.objects).toEqual(first.objects);
    const foreign = issue(
      makeCa('other', 3650, now),
      { cn: 'typha-server', usage: 'serverAuth', days: 365 },
      now,
    );
    expect(leafUsable(foreign, ca, 'typha-server', now)).toBe(false);
    const expiring = issue(ca, { cn: 'typha-server', usage: 'serverAuth', days: 10 }, now);
    expect(leafUsable(expiring, ca, 'typha-server', now)).toBe(false);
    expect(leafUsable(t, ca, 'typha-client', now)).toBe(false);
    expect(certificateObjects(ca, expiring, n, now).hash).not.toBe(first.hash);
  });

  it('keeps a stored CA, and makes a new one for garbage', () => {
    expect(caFrom(ca, now)).toEqual({ ca, created: false });
    expect(caFrom({ certPem: 'junk', keyPem: 'junk' }, now).created).toBe(true);
  });
});
