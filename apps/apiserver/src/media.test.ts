import { describe, expect, it } from 'vitest';
import { bodyTypeOf, contentTypeOf, negotiate } from './media.js';
import { patchTypeOf } from './patch.js';

const ALL = new Set(['object', 'table', 'partial-metadata'] as const);

describe('negotiate', () => {
  it('answers kubectl get with a Table, and JSON to a plain client', () => {
    expect(
      negotiate(
        'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json',
        ALL,
      ),
    ).toEqual({ kind: 'table', version: 'v1' });
    expect(negotiate(undefined, ALL)).toEqual({ kind: 'object' });
    expect(negotiate('*/*', ALL)).toEqual({ kind: 'object' });
  });

  it('skips protobuf and honours q', () => {
    expect(
      negotiate(
        'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
        ALL,
      ),
    ).toEqual({ kind: 'partial-metadata', version: 'v1' });
    expect(negotiate('application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io', ALL)).toEqual({
      kind: 'table',
      version: 'v1',
    });
  });

  it('answers aggregated discovery only where it is served', () => {
    const accept = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';
    expect(negotiate(accept, new Set(['object', 'discovery']))).toEqual({ kind: 'discovery', version: 'v2' });
    expect(negotiate(accept, ALL)).toEqual({ kind: 'object' });
    expect(contentTypeOf({ kind: 'discovery', version: 'v2' }, true)).toBe(
      'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
    );
  });

  it('refuses a client that accepts nothing served, naming what is', () => {
    expect(() => negotiate('application/vnd.kubernetes.protobuf', ALL)).toThrow(
      /only the following media types are accepted: application\/json, application\/json;as=Table/,
    );
  });
});

describe('body and patch types', () => {
  it('reads JSON and YAML bodies, and the three patch types', () => {
    expect(bodyTypeOf('application/json; charset=utf-8')).toBe('json');
    expect(bodyTypeOf('application/yaml')).toBe('yaml');
    expect(() => bodyTypeOf('text/plain')).toThrow(/unknown format \(text\/plain\)/);
    expect(patchTypeOf('application/merge-patch+json')).toBe('merge');
    expect(patchTypeOf('application/json-patch+json')).toBe('json');
    expect(patchTypeOf('application/strategic-merge-patch+json')).toBe('strategic');
  });

  it('refuses server-side apply with what to use instead', () => {
    expect(() => patchTypeOf('application/apply-patch+yaml')).toThrow(
      /server-side apply is not supported by calico-apiserver: use client-side `kubectl apply`/,
    );
  });
});
