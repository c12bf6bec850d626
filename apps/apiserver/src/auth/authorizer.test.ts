import { describe, expect, it } from 'vitest';
import type { ApiServerError } from '../errors.js';
import type { User } from './authenticator.js';
import { type AccessReviewSpec, Authorizer } from './authorizer.js';

const bob: User = { name: 'bob', groups: ['devs', 'system:authenticated'], extra: {} };

describe('Authorizer', () => {
  it('asks once per question while the answer is fresh, and again after it expires', async () => {
    let now = 0;
    const asked: AccessReviewSpec[] = [];
    const a = new Authorizer(
      async (spec) => {
        asked.push(spec);
        return { allowed: spec.resourceAttributes.verb === 'get' };
      },
      { now: () => now },
    );
    const get = { verb: 'get' as const, resource: 'ippools', name: 'p1' };
    await Promise.all([a.authorize(bob, get), a.authorize(bob, get)]);
    await a.authorize(bob, get);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toEqual({
      user: 'bob',
      groups: ['devs', 'system:authenticated'],
      resourceAttributes: {
        group: 'projectcalico.org',
        version: 'v3',
        resource: 'ippools',
        subresource: '',
        verb: 'get',
        namespace: '',
        name: 'p1',
      },
    });
    now = 11_000;
    await a.authorize(bob, get);
    expect(asked).toHaveLength(2);
  });

  it('refuses in Kubernetes’ words, with the reviewer’s reason', async () => {
    const a = new Authorizer(async () => ({ allowed: false, reason: 'no RBAC policy matched' }));
    const e = await a
      .authorize(bob, { verb: 'delete', resource: 'networkpolicies', namespace: 'prod', name: 'db' })
      .then(
        () => undefined,
        (x: ApiServerError) => x,
      );
    expect([e?.code, e?.message]).toEqual([
      'forbidden',
      'networkpolicies.projectcalico.org "db" is forbidden: User "bob" cannot delete resource "networkpolicies" in API group "projectcalico.org" in the namespace "prod": no RBAC policy matched',
    ]);
  });

  it('denies when the review cannot be made, and asks again next time', async () => {
    let calls = 0;
    const a = new Authorizer(async () => {
      calls++;
      if (calls === 1) throw new Error('connection refused');
      return { allowed: true };
    });
    const list = { verb: 'list' as const, resource: 'tiers' };
    await expect(a.authorize(bob, list)).rejects.toThrow(
      /the authorization review failed: connection refused/,
    );
    await new Promise((r) => setTimeout(r, 0));
    await a.authorize(bob, list);
    expect(calls).toBe(2);
  });
});
