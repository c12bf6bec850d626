/**
 * Who a request is from, as a delegated extension API server decides it (Kubernetes' union of
 * authenticators, in its order):
 *
 *   1. front proxy: a client certificate issued by a requestheader CA, with an allowed CN (any CN
 *      when the list is empty) → the user, groups and extra of the X-Remote-* headers (the names
 *      the ConfigMap gives). Without a username header it is not this method.
 *   2. client certificate issued by a client CA → user = CN, groups = O.
 *   3. `Authorization: Bearer <token>` → TokenReview.
 *   4. nobody: the request is refused 401 (health paths excepted, by the caller).
 *
 * Headers of the front proxy are read only after its certificate is verified; from anyone else
 * they mean nothing. Every authenticated user is in `system:authenticated`, as Kubernetes adds it.
 * The certificate chain must already be verified by TLS against every trusted CA (the server's
 * `ca`); which CA issued it is decided here by signature, for each bundle apart.
 */
import type { X509Certificate } from 'node:crypto';
import type { AuthenticationConfig, RequestHeaderConfig } from './authn-config.js';

export interface User {
  readonly name: string;
  readonly uid?: string;
  readonly groups: readonly string[];
  readonly extra: Readonly<Record<string, readonly string[]>>;
}

/** Looks a bearer token up (TokenReview); undefined when it is not a valid token. */
export type TokenReviewer = (token: string) => Promise<User | undefined>;

export interface AuthenticationRequest {
  /** The client's certificate chain, leaf first, when TLS verified it; else absent. */
  readonly chain?: readonly X509Certificate[];
  /** Request headers, names in lower case, every value of a repeated header. */
  readonly headers: Readonly<Record<string, readonly string[] | undefined>>;
}

export const AUTHENTICATED_GROUP = 'system:authenticated';

/** Whether some certificate of the chain was issued (and signed) by one of `cas`. */
export function issuedByAny(chain: readonly X509Certificate[], cas: readonly X509Certificate[]): boolean {
  return chain.some((cert) => cas.some((ca) => cert.checkIssued(ca) && cert.verify(ca.publicKey)));
}

/** The values of one RDN attribute (`CN`, `O`) of a subject as node:crypto prints it. */
export function subjectValues(subject: string, attribute: string): string[] {
  return subject
    .split('\n')
    .map((line) => /^([^=]+)=(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null && m[1] === attribute)
    .map((m) => m[2]!);
}

function headerValues(headers: AuthenticationRequest['headers'], names: readonly string[]): string[] {
  return names.flatMap((n) => headers[n.toLowerCase()] ?? []).filter((v) => v !== '');
}

function fromFrontProxy(req: AuthenticationRequest, rh: RequestHeaderConfig): User | undefined {
  const leaf = req.chain?.[0];
  if (!leaf || !issuedByAny(req.chain!, rh.cas)) return undefined;
  const cn = subjectValues(leaf.subject, 'CN')[0] ?? '';
  if (rh.allowedNames.length > 0 && !rh.allowedNames.includes(cn)) return undefined;
  const name = headerValues(req.headers, rh.usernameHeaders)[0];
  if (!name) return undefined;
  const extra: Record<string, string[]> = {};
  for (const [header, values] of Object.entries(req.headers)) {
    const prefix = rh.extraHeaderPrefixes.find((p) => header.startsWith(p.toLowerCase()));
    if (!prefix || !values) continue;
    let key = header.slice(prefix.length);
    try {
      key = decodeURIComponent(key);
    } catch {
      // Kubernetes keeps a key it cannot unescape as it is.
    }
    extra[key.toLowerCase()] = [...(extra[key.toLowerCase()] ?? []), ...values];
  }
  return { name, groups: headerValues(req.headers, rh.groupHeaders), extra };
}

function fromClientCertificate(req: AuthenticationRequest, config: AuthenticationConfig): User | undefined {
  const leaf = req.chain?.[0];
  if (!leaf || !issuedByAny(req.chain!, config.clientCas)) return undefined;
  const name = subjectValues(leaf.subject, 'CN')[0];
  if (!name) return undefined;
  return { name, groups: subjectValues(leaf.subject, 'O'), extra: {} };
}

function withAuthenticatedGroup(u: User): User {
  return u.groups.includes(AUTHENTICATED_GROUP) ? u : { ...u, groups: [...u.groups, AUTHENTICATED_GROUP] };
}

/** The request's user, or undefined when no method establishes one. */
export async function authenticate(
  req: AuthenticationRequest,
  config: AuthenticationConfig,
  tokens: TokenReviewer,
): Promise<User | undefined> {
  const proxied = config.requestHeader ? fromFrontProxy(req, config.requestHeader) : undefined;
  if (proxied) return withAuthenticatedGroup(proxied);
  const cert = fromClientCertificate(req, config);
  if (cert) return withAuthenticatedGroup(cert);
  const auth = req.headers.authorization?.[0];
  const m = auth ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
  if (m) {
    const u = await tokens(m[1]!);
    if (u) return withAuthenticatedGroup(u);
  }
  return undefined;
}
