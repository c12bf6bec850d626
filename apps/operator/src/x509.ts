/**
 * Certificates for Felix ↔ Typha, made without openssl (the operator's image has none): an ECDSA
 * P-256 CA and leaf certificates it signs, DER-encoded here from node:crypto's keys and
 * signatures. No I/O: keys and certificates in, PEM out.
 *
 *   makeCa('tigera-operator-signer')            self-signed, CA:TRUE, keyCertSign
 *   issue(ca, { cn: 'typha-server', … })        CA:FALSE, digitalSignature, the extended key usage
 *                                                asked for (serverAuth / clientAuth), DNS SANs
 *
 * Upstream's operator makes the same pair of identities: Typha's certificate has CN
 * `typha-server` (Felix checks FELIX_TYPHACN), calico-node's has CN `typha-client` (Typha checks
 * TYPHA_CLIENTCN).
 */
import {
  createPrivateKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  sign,
  X509Certificate,
} from 'node:crypto';

export interface KeyPair {
  readonly certPem: string;
  readonly keyPem: string;
}

export interface LeafRequest {
  readonly cn: string;
  readonly usage: 'serverAuth' | 'clientAuth';
  readonly dnsNames?: readonly string[];
  readonly days: number;
}

const len = (n: number): Buffer => {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
};
const tlv = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), len(body.length), body]);
};
const seq = (...c: Buffer[]) => tlv(0x30, ...c);
const set = (...c: Buffer[]) => tlv(0x31, ...c);
const octets = (b: Buffer) => tlv(0x04, b);
const bool = (v: boolean) => tlv(0x01, Buffer.from([v ? 0xff : 0]));
const utf8 = (s: string) => tlv(0x0c, Buffer.from(s, 'utf8'));

function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const out = [a! * 40 + b!];
  for (const n of rest) {
    const parts = [n & 0x7f];
    for (let v = Math.floor(n / 128); v > 0; v = Math.floor(v / 128)) parts.unshift((v & 0x7f) | 0x80);
    out.push(...parts);
  }
  return tlv(0x06, Buffer.from(out));
}

function positiveInt(b: Buffer): Buffer {
  const body = b[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), b]) : b;
  return tlv(0x02, body);
}

/** A BIT STRING of key-usage bits (bit 0 is the most significant bit of the first byte). */
function bits(set: readonly number[]): Buffer {
  const bytes = Buffer.alloc(Math.floor(Math.max(...set) / 8) + 1);
  for (const i of set) bytes[Math.floor(i / 8)]! |= 0x80 >> (i % 8);
  const last = bytes[bytes.length - 1]!;
  let unused = 0;
  while (unused < 7 && (last & (1 << unused)) === 0) unused++;
  return tlv(0x03, Buffer.from([unused]), bytes);
}

function time(d: Date): Buffer {
  const p = (n: number) => String(n).padStart(2, '0');
  const body = `${p(d.getUTCFullYear() % 100)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`;
  if (d.getUTCFullYear() >= 2050) {
    return tlv(0x18, Buffer.from(`${d.getUTCFullYear()}${body.slice(2)}`, 'ascii'));
  }
  return tlv(0x17, Buffer.from(body, 'ascii'));
}

const name = (cn: string) => seq(set(seq(oid('2.5.4.3'), utf8(cn))));
const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));
const EKU = { serverAuth: '1.3.6.1.5.5.7.3.1', clientAuth: '1.3.6.1.5.5.7.3.2' };
const ext = (id: string, critical: boolean, value: Buffer) =>
  seq(oid(id), ...(critical ? [bool(true)] : []), octets(value));

function certificate(
  subject: string,
  issuer: string,
  publicKey: KeyObject,
  signer: KeyObject,
  days: number,
  extensions: Buffer[],
  now: Date,
): string {
  const notBefore = new Date(now.getTime() - 60 * 60_000);
  const notAfter = new Date(now.getTime() + days * 86_400_000);
  // Positive, and its first byte never 0: DER integers are minimal, and a parser refuses a
  // certificate whose serial starts with a needless zero byte (1 in 128 random serials did).
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x40;
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))),
    positiveInt(serial),
    ECDSA_SHA256,
    name(issuer),
    seq(time(notBefore), time(notAfter)),
    name(subject),
    publicKey.export({ type: 'spki', format: 'der' }),
    tlv(0xa3, seq(...extensions)),
  );
  const signature = sign('sha256', tbs, signer);
  const der = seq(tbs, ECDSA_SHA256, tlv(0x03, Buffer.from([0]), signature));
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n');
  return `-----BEGIN CERTIFICATE-----\n${b64.trimEnd()}\n-----END CERTIFICATE-----\n`;
}

function newKey() {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
}

/** A self-signed CA valid for `days`. */
export function makeCa(cn: string, days = 3650, now = new Date()): KeyPair {
  const { publicKey, privateKey } = newKey();
  const certPem = certificate(
    cn,
    cn,
    publicKey,
    privateKey,
    days,
    [ext('2.5.29.19', true, seq(bool(true))), ext('2.5.29.15', true, bits([0, 5, 6]))],
    now,
  );
  return { certPem, keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}

/** A leaf certificate signed by `ca`, with a key of its own. */
export function issue(ca: KeyPair, req: LeafRequest, now = new Date()): KeyPair {
  const { publicKey, privateKey } = newKey();
  const caKey = createPrivateKey(ca.keyPem);
  const issuer =
    /CN=([^\n,]+)/.exec(new X509Certificate(ca.certPem).subject)?.[1] ?? 'tigera-operator-signer';
  const extensions = [
    ext('2.5.29.19', true, seq()),
    ext('2.5.29.15', true, bits([0])),
    ext('2.5.29.37', false, seq(oid(EKU[req.usage]))),
    ...(req.dnsNames && req.dnsNames.length > 0
      ? [ext('2.5.29.17', false, seq(...req.dnsNames.map((d) => tlv(0x82, Buffer.from(d, 'ascii')))))]
      : []),
  ];
  const certPem = certificate(req.cn, issuer, publicKey, caKey, req.days, extensions, now);
  return { certPem, keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}
