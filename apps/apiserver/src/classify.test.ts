import { ValidationError } from '@calico-ts/api';
import { CtlError } from '@calico-ts/ctl';
import { DatastoreError } from '@calico-ts/datastore';
import { describe, expect, it } from 'vitest';
import { classify } from './classify.js';
import { statusOf } from './errors.js';
import { servedResources } from './resources.js';

const pools = servedResources('etcdv3').find((r) => r.kind === 'IPPool')!;
const status = (e: unknown, verb: 'get' | 'create' = 'get') =>
  statusOf(classify(e, { resource: pools, name: 'p1', verb }));

describe('classify', () => {
  it('gives calicoctl’s and the datastore’s failures Kubernetes’ status and wording', () => {
    expect(
      status(new CtlError('not-found', 'resource does not exist: IPPool(p1) with error: <nil>')),
    ).toMatchObject({
      code: 404,
      reason: 'NotFound',
      message: 'ippools.projectcalico.org "p1" not found',
      details: { name: 'p1', group: 'projectcalico.org', kind: 'ippools' },
    });
    expect(status(new DatastoreError('already-exists', 'x'), 'create')).toMatchObject({
      code: 409,
      reason: 'AlreadyExists',
    });
    expect(status(new DatastoreError('conflict', 'x'))).toMatchObject({ code: 409, reason: 'Conflict' });
    expect(status(new DatastoreError('unavailable', 'etcd down'))).toMatchObject({
      code: 503,
      reason: 'ServiceUnavailable',
    });
    expect(
      status(new CtlError('unsupported', 'operation delete is not supported on ClusterInformation')),
    ).toMatchObject({
      code: 405,
      reason: 'MethodNotAllowed',
      message: 'operation delete is not supported on ClusterInformation',
    });
    expect(status(new Error('boom'))).toMatchObject({
      code: 500,
      reason: 'InternalError',
      message: 'Internal error occurred: boom',
    });
  });

  it('reports a datastore’s validation with every rule as a cause', () => {
    const errors = [{ path: 'spec.cidr', rule: 'overlaps IPPool "q" (198.19.0.0/16)' }];
    const e = new DatastoreError('invalid', 'IPPool "p1" was not written: ...', {
      cause: new ValidationError('IPPool "p1"', errors),
    });
    expect(status(e)).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      code: 422,
      reason: 'Invalid',
      message: 'IPPool.projectcalico.org "p1" is invalid: spec.cidr: overlaps IPPool "q" (198.19.0.0/16)',
      details: {
        name: 'p1',
        group: 'projectcalico.org',
        kind: 'IPPool',
        causes: [
          { reason: 'FieldValueInvalid', field: 'spec.cidr', message: 'overlaps IPPool "q" (198.19.0.0/16)' },
        ],
      },
    });
  });
});
