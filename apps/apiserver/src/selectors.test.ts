import { describe, expect, it } from 'vitest';
import type { ApiServerError } from './errors.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';

const labels: Record<string, string>[] = [{ app: 'web', tier: 'front' }, { app: 'db', n: '5' }, {}];
const pick = (s: string) => labels.map((l, i) => (parseLabelSelector(s)(l) ? i : -1)).filter((i) => i >= 0);
const refusal = (f: () => unknown) => {
  try {
    f();
    return undefined;
  } catch (e) {
    return [(e as ApiServerError).code, (e as Error).message];
  }
};

describe('label selectors', () => {
  it('reads every requirement form Kubernetes has', () => {
    expect(pick('')).toEqual([0, 1, 2]);
    expect(pick('app=web')).toEqual([0]);
    expect(pick('app==db')).toEqual([1]);
    expect(pick('app!=web')).toEqual([1, 2]);
    expect(pick('app in (web, db)')).toEqual([0, 1]);
    expect(pick('app notin (web)')).toEqual([1, 2]);
    expect(pick('tier')).toEqual([0]);
    expect(pick('!tier')).toEqual([1, 2]);
    expect(pick('n>4')).toEqual([1]);
    expect(pick('n<4')).toEqual([]);
    expect(pick('app in (web,db),!tier')).toEqual([1]);
  });

  it('refuses a malformed selector, naming it', () => {
    expect(refusal(() => parseLabelSelector('app=we b'))?.[0]).toBe('bad-request');
    expect(refusal(() => parseLabelSelector('app in web'))?.[1]).toMatch(/labelSelector "app in web"/);
    expect(refusal(() => parseLabelSelector('n>x'))?.[1]).toMatch(/'x' is not an integer/);
    expect(refusal(() => parseLabelSelector('a,,b'))?.[1]).toMatch(/empty requirement/);
  });
});

describe('field selectors', () => {
  it('selects by metadata.name and metadata.namespace', () => {
    const f = parseFieldSelector('metadata.name=db,metadata.namespace!=dev');
    expect([f('db', 'prod'), f('db', 'dev'), f('web', 'prod'), f('db', undefined)]).toEqual([
      true,
      false,
      false,
      true,
    ]);
    expect(parseFieldSelector('metadata.name==x')('x', undefined)).toBe(true);
  });

  it('refuses any other field, naming it', () => {
    expect(refusal(() => parseFieldSelector('spec.cidr=1'))).toEqual([
      'bad-request',
      'field label not supported: spec.cidr (this server supports metadata.name and metadata.namespace)',
    ]);
  });
});
