/**
 * Certificates for tests, made with openssl (EC P-256, milliseconds each): CAs, serving
 * certificates for DNS names and IPs, client certificates with a subject.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface Pem {
  readonly certFile: string;
  readonly keyFile: string;
  readonly cert: string;
  readonly key: string;
}

function openssl(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('openssl', args, (error, _stdout, stderr) => {
      if (error) reject(new Error(`openssl ${args[0]} failed: ${stderr || error.message}`));
      else resolve();
    });
  });
}

let serial = 1000;

async function key(file: string): Promise<void> {
  await openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file]);
}

async function read(certFile: string, keyFile: string): Promise<Pem> {
  return { certFile, keyFile, cert: await readFile(certFile, 'utf8'), key: await readFile(keyFile, 'utf8') };
}

/** A self-signed CA named `name` in `dir`. */
export async function makeCa(dir: string, name: string): Promise<Pem> {
  const keyFile = join(dir, `${name}-key.pem`);
  const certFile = join(dir, `${name}.pem`);
  await key(keyFile);
  await openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    keyFile,
    '-subj',
    `/CN=${name}`,
    '-days',
    '2',
    '-out',
    certFile,
  ]);
  return read(certFile, keyFile);
}

export interface IssueOptions {
  /** `/O=devs/CN=alice`. */
  readonly subject: string;
  /** Serving certificate for these (`DNS:x`, `IP:y`); else a client certificate. */
  readonly serverNames?: readonly string[];
}

/** A certificate `name` issued by `ca`. */
export async function issue(dir: string, ca: Pem, name: string, o: IssueOptions): Promise<Pem> {
  const keyFile = join(dir, `${name}-key.pem`);
  const certFile = join(dir, `${name}.pem`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  await key(keyFile);
  await writeFile(
    ext,
    o.serverNames
      ? `subjectAltName=${o.serverNames.join(',')}\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n`
      : 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n',
  );
  await openssl(['req', '-new', '-key', keyFile, '-subj', o.subject, '-out', csr]);
  await openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.certFile,
    '-CAkey',
    ca.keyFile,
    '-set_serial',
    String(serial++),
    '-days',
    '2',
    '-extfile',
    ext,
    '-out',
    certFile,
  ]);
  return read(certFile, keyFile);
}
