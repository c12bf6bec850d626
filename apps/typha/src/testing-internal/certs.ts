/**
 * Certificates for Typha tests, made with openssl in a temp dir (EC P-256, milliseconds): a CA,
 * Typha's server certificate (CN typha-server, URI SAN spiffe://cluster/typha, IP 127.0.0.1), a
 * Felix client certificate (CN typha-client, URI SAN spiffe://cluster/felix), a client certificate
 * with another CN from the same CA, and one from a second, unrelated CA.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface CertPair {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly certFile: string;
  readonly keyFile: string;
}

export interface TyphaTestCerts {
  readonly dir: string;
  readonly ca: Buffer;
  readonly caFile: string;
  readonly server: CertPair;
  readonly client: CertPair;
  readonly wrongCn: CertPair;
  readonly otherCa: CertPair;
  [Symbol.asyncDispose](): Promise<void>;
}

function openssl(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('openssl', args, (e, _out, stderr) =>
      e ? reject(new Error(`openssl ${args[0]}: ${stderr}`)) : resolve(),
    );
  });
}

export async function makeTyphaCerts(): Promise<TyphaTestCerts> {
  const dir = await mkdtemp(join(tmpdir(), 'calico-ts-typha-certs-'));
  try {
    const p = (n: string) => join(dir, n);
    const key = (n: string) =>
      openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', p(n)]);
    await Promise.all(['ca', 'ca2', 'server', 'client', 'wrong', 'other'].map((n) => key(`${n}-key.pem`)));
    for (const ca of ['ca', 'ca2']) {
      await openssl([
        'req',
        '-x509',
        '-new',
        '-key',
        p(`${ca}-key.pem`),
        '-subj',
        `/CN=typha test ${ca}`,
        '-days',
        '2',
        '-out',
        p(`${ca}.pem`),
      ]);
    }
    const sign = async (who: string, cn: string, ext: string, ca: string) => {
      await writeFile(p(`${who}.ext`), `${ext}\nkeyUsage=digitalSignature,keyEncipherment\n`);
      await openssl([
        'req',
        '-new',
        '-key',
        p(`${who}-key.pem`),
        '-subj',
        `/CN=${cn}`,
        '-out',
        p(`${who}.csr`),
      ]);
      await openssl([
        'x509',
        '-req',
        '-in',
        p(`${who}.csr`),
        '-CA',
        p(`${ca}.pem`),
        '-CAkey',
        p(`${ca}-key.pem`),
        '-CAcreateserial',
        '-days',
        '2',
        '-extfile',
        p(`${who}.ext`),
        '-out',
        p(`${who}.pem`),
      ]);
    };
    await sign(
      'server',
      'typha-server',
      'subjectAltName=IP:127.0.0.1,URI:spiffe://cluster/typha\nextendedKeyUsage=serverAuth',
      'ca',
    );
    await sign(
      'client',
      'typha-client',
      'subjectAltName=URI:spiffe://cluster/felix\nextendedKeyUsage=clientAuth',
      'ca',
    );
    await sign('wrong', 'someone-else', 'extendedKeyUsage=clientAuth', 'ca');
    await sign(
      'other',
      'typha-client',
      'subjectAltName=URI:spiffe://cluster/felix\nextendedKeyUsage=clientAuth',
      'ca2',
    );
    const pair = async (who: string): Promise<CertPair> => ({
      cert: await readFile(p(`${who}.pem`)),
      key: await readFile(p(`${who}-key.pem`)),
      certFile: p(`${who}.pem`),
      keyFile: p(`${who}-key.pem`),
    });
    return {
      dir,
      ca: await readFile(p('ca.pem')),
      caFile: p('ca.pem'),
      server: await pair('server'),
      client: await pair('client'),
      wrongCn: await pair('wrong'),
      otherCa: await pair('other'),
      [Symbol.asyncDispose]: () => rm(dir, { recursive: true, force: true }),
    };
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
}
