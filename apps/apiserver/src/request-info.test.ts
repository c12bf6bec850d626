import { describe, expect, it } from 'vitest';
import type { ApiServerError } from './errors.js';
import { requestTarget } from './request-info.js';
import { servedResources } from './resources.js';

const byPlural = new Map(servedResources('kubernetes').map((r) => [r.plural, r]));
const target = (method: string, url: string) => {
  const u = new URL(url, 'https://x');
  return requestTarget(method, u.pathname, u.searchParams, byPlural);
};
const brief = (method: string, url: string) => {
  const t = target(method, url);
  return t.kind === 'resource' ? [t.resource.plural, t.verb, t.namespace, t.name] : [t.kind];
};
const code = (method: string, url: string) => {
  try {
    target(method, url);
    return 'ok';
  } catch (e) {
    return (e as ApiServerError).code;
  }
};

describe('requestTarget', () => {
  it('reads health, discovery, OpenAPI and version paths', () => {
    expect(target('GET', '/readyz')).toEqual({ kind: 'health', check: 'readyz' });
    expect(target('GET', '/livez/ping')).toEqual({ kind: 'health', check: 'livez' });
    expect(target('GET', '/apis')).toEqual({ kind: 'discovery', level: 'apis' });
    expect(target('GET', '/apis/projectcalico.org')).toEqual({ kind: 'discovery', level: 'group' });
    expect(target('GET', '/apis/projectcalico.org/v3')).toEqual({ kind: 'discovery', level: 'version' });
    expect(target('GET', '/openapi/v3/apis/projectcalico.org/v3?hash=1')).toEqual({
      kind: 'openapi',
      document: 'v3-group-version',
    });
    expect(target('GET', '/version')).toEqual({ kind: 'version' });
  });

  it('names the verb as Kubernetes does', () => {
    const base = '/apis/projectcalico.org/v3';
    expect(brief('GET', `${base}/ippools`)).toEqual(['ippools', 'list', undefined, undefined]);
    expect(brief('GET', `${base}/ippools?watch=true`)).toEqual(['ippools', 'watch', undefined, undefined]);
    expect(brief('GET', `${base}/watch/ippools/p1`)).toEqual(['ippools', 'watch', undefined, 'p1']);
    expect(brief('GET', `${base}/ippools/p1`)).toEqual(['ippools', 'get', undefined, 'p1']);
    expect(brief('POST', `${base}/ippools`)).toEqual(['ippools', 'create', undefined, undefined]);
    expect(brief('PUT', `${base}/ippools/p1`)).toEqual(['ippools', 'update', undefined, 'p1']);
    expect(brief('PATCH', `${base}/ippools/p1`)).toEqual(['ippools', 'patch', undefined, 'p1']);
    expect(brief('DELETE', `${base}/ippools/p1`)).toEqual(['ippools', 'delete', undefined, 'p1']);
    expect(brief('DELETE', `${base}/ippools`)).toEqual(['ippools', 'deletecollection', undefined, undefined]);
    expect(brief('GET', `${base}/namespaces/prod/networkpolicies/db`)).toEqual([
      'networkpolicies',
      'get',
      'prod',
      'db',
    ]);
    expect(brief('GET', `${base}/networkpolicies`)).toEqual([
      'networkpolicies',
      'list',
      undefined,
      undefined,
    ]);
  });

  it('refuses what is not served there', () => {
    const base = '/apis/projectcalico.org/v3';
    expect(code('GET', `${base}/nopes`)).toBe('not-found');
    expect(code('GET', '/apis/crd.projectcalico.org/v1')).toBe('not-found');
    expect(code('GET', `${base}/namespaces/prod/ippools`)).toBe('not-found');
    expect(code('GET', `${base}/ippools/p1/status`)).toBe('not-found');
    expect(code('POST', `${base}/networkpolicies`)).toBe('method-not-allowed');
    expect(code('POST', `${base}/ippools/p1`)).toBe('method-not-allowed');
    expect(code('PUT', `${base}/ippools`)).toBe('method-not-allowed');
    expect(code('GET', '/metrics')).toBe('not-found');
  });
});
