import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { connect, createServer, type TLSSocket } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { issue, makeCa } from './x509.js';

describe('x509', () => {
  const ca = makeCa('tigera-operator-signer');
  const server = issue(ca, {
    cn: 'typha-server',
    usage: 'serverAuth',
    dnsNames: ['typha-server'],
    days: 365,
  });
  const client = issue(ca, { cn: 'typha-client', usage: 'clientAuth', days: 365 });

  it('makes a CA and leaves it signed, as a TLS library reads them', () => {
    const c = new X509Certificate(ca.certPem);
    expect(c.ca).toBe(true);
    expect(c.subject).toBe('CN=tigera-operator-signer');
    const s = new X509Certificate(server.certPem);
    expect(s.ca).toBe(false);
    expect(s.subject).toBe('CN=typha-server');
    expect(s.issuer).toBe('CN=tigera-operator-signer');
    expect(s.checkIssued(c)).toBe(true);
    expect(s.verify(c.publicKey)).toBe(true);
    expect(s.subjectAltName).toBe('DNS:typha-server');
    expect(s.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(new Date(s.validTo).getTime() - Date.now()).toBeGreaterThan(364 * 86_400_000);
    expect(new X509Certificate(makeCa('other').certPem).checkIssued(c)).toBe(false);
  });

  it('carries a mutually authenticated TLS connection, each side checking the other’s CN', async () => {
    const accepted: string[] = [];
    const srv = createServer(
      {
        cert: server.certPem,
        key: server.keyPem,
        ca: ca.certPem,
        requestCert: true,
        rejectUnauthorized: true,
      },
      (s: TLSSocket) => {
        accepted.push(String(s.getPeerCertificate().subject.CN));
        s.end(`hello ${s.getPeerCertificate().subject.CN}`);
      },
    );
    srv.listen(0, '127.0.0.1');
    await once(srv, 'listening');
    const port = (srv.address() as { port: number }).port;
    try {
      const sock = connect({
        host: '127.0.0.1',
        port,
        ca: ca.certPem,
        cert: client.certPem,
        key: client.keyPem,
        checkServerIdentity: (_h, cert) =>
          cert.subject.CN === 'typha-server' ? undefined : new Error(`unexpected CN ${cert.subject.CN}`),
      });
      let text = '';
      sock.on('data', (d: Buffer) => (text += d.toString()));
      await once(sock, 'end');
      expect(text).toBe('hello typha-client');
      // A client whose certificate another CA signed is refused.
      const stranger = issue(makeCa('stranger'), { cn: 'typha-client', usage: 'clientAuth', days: 1 });
      const bad = connect({
        host: '127.0.0.1',
        port,
        ca: ca.certPem,
        cert: stranger.certPem,
        key: stranger.keyPem,
        checkServerIdentity: () => undefined,
      });
      const refusedByServer = once(srv, 'tlsClientError');
      let got = '';
      bad.on('data', (d: Buffer) => (got += d.toString()));
      const outcome = await new Promise<string>((resolve) => {
        bad.once('error', (e) => resolve(`error: ${e.message}`));
        bad.once('end', () => resolve('ended'));
      });
      // The server refused the handshake: its connection handler never ran for this client.
      await refusedByServer;
      expect(outcome).toMatch(/^(ended|error: .*)$/);
      expect(got).toBe('');
      expect(accepted).toEqual(['typha-client']);
      bad.destroy();
    } finally {
      srv.close();
    }
  });

  it('gives every certificate a serial a strict parser reads: 600 leaves, each parsed and checked', () => {
    // A random serial that began with a zero byte was a non-minimal DER integer, refused by
    // OpenSSL about once in 128 certificates.
    const ca = makeCa('serials');
    const caCert = new X509Certificate(ca.certPem);
    for (let i = 0; i < 600; i++) {
      const leaf = new X509Certificate(issue(ca, { cn: `leaf-${i}`, usage: 'serverAuth', days: 30 }).certPem);
      expect(leaf.verify(caCert.publicKey)).toBe(true);
      expect(leaf.serialNumber).toMatch(/^[4-7][0-9A-F]{31}$/);
    }
  });
});
