/**
 * May this user do this? Asked of kube-apiserver as a SubjectAccessReview (authorization.k8s.io/v1)
 * per request, with the request's resource attributes; answers are kept briefly (allowed and
 * denied each 10 s by default, as Kubernetes' delegated authorizer keeps them), so a burst of
 * requests costs one review. A review that cannot be made denies (fail closed).
 *
 * The refusal's wording is Kubernetes' (`User "bob" cannot list resource "ippools" in API group
 * "projectcalico.org" at the cluster scope`), with the reviewer's reason after it.
 *
 * Thread-safety: one cache per instance; concurrent identical questions share one review.
 */
import { ApiServerError } from '../errors.js';
import { GROUP, VERSION, type Verb } from '../resources.js';
import type { User } from './authenticator.js';

export interface ResourceAttributes {
  readonly verb: Verb;
  readonly resource: string;
  readonly namespace?: string;
  readonly name?: string;
}

/** The `spec` of a SubjectAccessReview. */
export interface AccessReviewSpec {
  readonly user: string;
  readonly uid?: string;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
  readonly resourceAttributes: {
    readonly group: string;
    readonly version: string;
    readonly resource: string;
    readonly subresource: string;
    readonly verb: string;
    readonly namespace: string;
    readonly name: string;
  };
}

export interface AccessDecision {
  readonly allowed: boolean;
  readonly reason?: string;
  /** The review could not be made (denied, and not kept). */
  readonly failed?: boolean;
}

/** Makes one SubjectAccessReview (kube-apiserver). */
export type AccessReviewer = (spec: AccessReviewSpec) => Promise<AccessDecision>;

export interface AuthorizerOptions {
  readonly allowedTtlMs?: number;
  readonly deniedTtlMs?: number;
  readonly maxEntries?: number;
  readonly now?: () => number;
}

/** The review of `user` doing `a`. */
export function reviewSpec(user: User, a: ResourceAttributes): AccessReviewSpec {
  return {
    user: user.name,
    ...(user.uid ? { uid: user.uid } : {}),
    groups: user.groups,
    ...(Object.keys(user.extra).length > 0 ? { extra: user.extra } : {}),
    resourceAttributes: {
      group: GROUP,
      version: VERSION,
      resource: a.resource,
      subresource: '',
      verb: a.verb,
      namespace: a.namespace ?? '',
      name: a.name ?? '',
    },
  };
}

/** Kubernetes' Forbidden for `user` doing `a`. */
export function forbidden(user: User, a: ResourceAttributes, reason?: string): ApiServerError {
  const where = a.namespace ? `in the namespace "${a.namespace}"` : 'at the cluster scope';
  const why = `User "${user.name}" cannot ${a.verb} resource "${a.resource}" in API group "${GROUP}" ${where}`;
  const subject = a.name ? `${a.resource}.${GROUP} "${a.name}"` : `${a.resource}.${GROUP}`;
  return new ApiServerError('forbidden', `${subject} is forbidden: ${why}${reason ? `: ${reason}` : ''}`, {
    details: { ...(a.name ? { name: a.name } : {}), group: GROUP, kind: a.resource },
  });
}

interface Entry {
  readonly until: number;
  readonly decision: Promise<AccessDecision>;
}

export class Authorizer {
  readonly #review: AccessReviewer;
  readonly #allowedTtl: number;
  readonly #deniedTtl: number;
  readonly #max: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, Entry>();

  constructor(review: AccessReviewer, opts: AuthorizerOptions = {}) {
    this.#review = review;
    this.#allowedTtl = opts.allowedTtlMs ?? 10_000;
    this.#deniedTtl = opts.deniedTtlMs ?? 10_000;
    this.#max = opts.maxEntries ?? 10_000;
    this.#now = opts.now ?? Date.now;
  }

  /** The decision for `user` doing `a`: from the cache, else a review. */
  decide(user: User, a: ResourceAttributes): Promise<AccessDecision> {
    const spec = reviewSpec(user, a);
    const key = JSON.stringify(spec);
    const now = this.#now();
    const hit = this.#cache.get(key);
    if (hit && hit.until > now) return hit.decision;
    const decision = this.#review(spec).catch(
      (e: unknown): AccessDecision => ({
        allowed: false,
        reason: `the authorization review failed: ${(e as Error).message}`,
        failed: true,
      }),
    );
    // Until the answer is in, concurrent asks share it; then it is kept for its TTL.
    this.#store(key, { until: now + this.#deniedTtl, decision });
    void decision.then((d) => {
      if (d.failed) this.#cache.delete(key);
      else
        this.#store(key, { until: this.#now() + (d.allowed ? this.#allowedTtl : this.#deniedTtl), decision });
    });
    return decision;
  }

  /** Throws Kubernetes' Forbidden unless `user` may do `a`. */
  async authorize(user: User, a: ResourceAttributes): Promise<void> {
    const d = await this.decide(user, a);
    if (!d.allowed) throw forbidden(user, a, d.reason);
  }

  #store(key: string, e: Entry): void {
    this.#cache.delete(key);
    this.#cache.set(key, e);
    while (this.#cache.size > this.#max) this.#cache.delete(this.#cache.keys().next().value!);
  }
}
