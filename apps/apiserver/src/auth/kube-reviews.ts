/**
 * What authentication and authorization ask of kube-apiserver, over the service account's
 * connection (I/O): the `extension-apiserver-authentication` ConfigMap, TokenReviews and
 * SubjectAccessReviews. Token answers are kept 10 s (keyed by the token's SHA-256, never the
 * token), as Kubernetes' delegated authenticator keeps them.
 *
 * Needs, for the service account: ClusterRole `system:auth-delegator` (create tokenreviews and
 * subjectaccessreviews) and Role `kube-system/extension-apiserver-authentication-reader`.
 */
import { createHash } from 'node:crypto';
import type { KubeHttp } from '@calico-ts/datastore/kube';
import type { TokenReviewer, User } from './authenticator.js';
import { AUTHENTICATION_CONFIGMAP } from './authn-config.js';
import type { AccessDecision, AccessReviewSpec } from './authorizer.js';

type Obj = Record<string, unknown>;

export interface KubeReviewsOptions {
  readonly tokenTtlMs?: number;
  readonly now?: () => number;
}

export class KubeReviews {
  readonly #http: KubeHttp;
  readonly #ttl: number;
  readonly #now: () => number;
  readonly #tokens = new Map<string, { until: number; user: Promise<User | undefined> }>();

  constructor(http: KubeHttp, opts: KubeReviewsOptions = {}) {
    this.#http = http;
    this.#ttl = opts.tokenTtlMs ?? 10_000;
    this.#now = opts.now ?? Date.now;
  }

  /** The data of ConfigMap kube-system/extension-apiserver-authentication. */
  async authenticationData(): Promise<Record<string, string>> {
    const { namespace, name } = AUTHENTICATION_CONFIGMAP;
    const cm = await this.#http.request<{ data?: Record<string, string> }>(
      'GET',
      `/api/v1/namespaces/${namespace}/configmaps/${name}`,
    );
    return cm.data ?? {};
  }

  /** TokenReview of a bearer token. */
  readonly reviewToken: TokenReviewer = (token) => {
    const key = createHash('sha256').update(token).digest('hex');
    const now = this.#now();
    const hit = this.#tokens.get(key);
    if (hit && hit.until > now) return hit.user;
    for (const [k, v] of this.#tokens) if (v.until <= now) this.#tokens.delete(k);
    const user = this.#tokenReview(token);
    this.#tokens.set(key, { until: now + this.#ttl, user });
    // A review that could not be made is not kept.
    user.catch(() => this.#tokens.delete(key));
    return user;
  };

  async #tokenReview(token: string): Promise<User | undefined> {
    const r = await this.#http.request<{ status?: Obj }>(
      'POST',
      '/apis/authentication.k8s.io/v1/tokenreviews',
      {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token },
      },
    );
    const status = r.status ?? {};
    if (status.authenticated !== true) return undefined;
    const u = (status.user ?? {}) as Obj;
    if (typeof u.username !== 'string' || u.username === '') return undefined;
    return {
      name: u.username,
      ...(typeof u.uid === 'string' && u.uid !== '' ? { uid: u.uid } : {}),
      groups: Array.isArray(u.groups) ? (u.groups as string[]) : [],
      extra: (u.extra ?? {}) as Record<string, string[]>,
    };
  }

  /** SubjectAccessReview. */
  readonly reviewAccess = async (spec: AccessReviewSpec): Promise<AccessDecision> => {
    const r = await this.#http.request<{ status?: Obj }>(
      'POST',
      '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec },
    );
    const status = r.status ?? {};
    const reason = typeof status.reason === 'string' && status.reason !== '' ? status.reason : undefined;
    return { allowed: status.allowed === true && status.denied !== true, ...(reason ? { reason } : {}) };
  };
}
