/**
 * Who the other end of a TLS connection is, checked as upstream Typha and Felix check it: the
 * certificate chain is verified against the CA by TLS itself; on top of that, when a common name
 * or a URI SAN is configured, the peer's certificate must carry that CN or that URI SAN (either
 * one suffices when both are set). Pure.
 */

/** The part of a peer certificate that is checked (node:tls `PeerCertificate`'s shape). */
export interface PeerCertificateLike {
  readonly subject?: { readonly CN?: string | readonly string[] } | null;
  /** `"DNS:a, URI:spiffe://x, IP Address:1.2.3.4"`, as node:tls reports it. */
  readonly subjectaltname?: string;
}

/** The identity a peer must have; empty strings count as unset. */
export interface PeerRequirement {
  readonly cn?: string;
  readonly uriSan?: string;
}

/** The URI SANs of a certificate's `subjectaltname` text. */
export function uriSansOf(subjectaltname: string | undefined): string[] {
  if (!subjectaltname) return [];
  return subjectaltname
    .split(/,\s*/)
    .filter((s) => s.startsWith('URI:'))
    .map((s) => s.slice('URI:'.length));
}

/** Why `cert` does not meet `want`, or undefined when it does (or nothing is required). */
export function peerMismatch(
  cert: PeerCertificateLike | undefined,
  want: PeerRequirement,
): string | undefined {
  const cn = want.cn ?? '';
  const uri = want.uriSan ?? '';
  if (cn === '' && uri === '') return undefined;
  if (!cert) return 'no certificate';
  const cns = cert.subject?.CN;
  const haveCns = cns === undefined ? [] : typeof cns === 'string' ? [cns] : [...cns];
  if (cn !== '' && haveCns.includes(cn)) return undefined;
  if (uri !== '' && uriSansOf(cert.subjectaltname).includes(uri)) return undefined;
  const wanted = [cn !== '' ? `CN ${cn}` : '', uri !== '' ? `URI SAN ${uri}` : '']
    .filter(Boolean)
    .join(' or ');
  return `certificate has neither ${wanted} (CN ${haveCns.join(',') || 'none'})`;
}
