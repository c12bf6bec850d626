import { type ClientConfig, DatastoreError } from '@calico-ts/datastore';
import { describe, expect, test } from 'vitest';
import { describeSecretError, secretsConnectionSource } from './kube-secrets.js';

describe('secretsConnectionSource', () => {
  const etcd: ClientConfig = { datastoreType: 'etcdv3', etcdEndpoints: ['http://198.18.0.9:2379'] };
  test("the Kubernetes datastore's own connection", () => {
    expect(secretsConnectionSource({ datastoreType: 'kubernetes', etcdEndpoints: [] }, {})).toBe('datastore');
  });
  test('on etcd: a kubeconfig or API endpoint, else in-cluster, else none', () => {
    expect(secretsConnectionSource({ ...etcd, kubeconfig: '/k' }, {})).toBe('kubeconfig');
    expect(secretsConnectionSource({ ...etcd, k8sAPIEndpoint: 'https://198.18.0.9:6443' }, {})).toBe(
      'kubeconfig',
    );
    expect(
      secretsConnectionSource(etcd, {
        KUBERNETES_SERVICE_HOST: '198.18.128.1',
        KUBERNETES_SERVICE_PORT: '443',
      }),
    ).toBe('in-cluster');
    expect(secretsConnectionSource(etcd, {})).toBe('none');
  });
});

describe('describeSecretError', () => {
  test('never repeats what a broken stream carried; keeps the API server refusal', () => {
    const undecodable = new DatastoreError(
      'unavailable',
      'WATCH /x: undecodable event: {"data":{"tor":"c2VjcmV0"}',
    );
    expect(describeSecretError(undecodable)).toBe('the API server is unavailable');
    const reset = new DatastoreError('unavailable', 'GET /x: socket hang up', {
      cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }),
    });
    expect(describeSecretError(reset)).toBe('the API server is unavailable (ECONNRESET)');
    const forbidden = new DatastoreError(
      'unauthorized',
      'GET /x: secrets is forbidden: User "n" cannot list',
    );
    expect(describeSecretError(forbidden)).toBe(
      'unauthorized: GET /x: secrets is forbidden: User "n" cannot list',
    );
    expect(describeSecretError(new Error('{"tor":"secret"}'))).toBe('unexpected error');
  });
});
