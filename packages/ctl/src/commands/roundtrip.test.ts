import { describe, expect, test } from 'vitest';
import { harness } from '../testing-internal/harness.js';
import { SAMPLE_DOCUMENTS, SAMPLE_RESOURCES } from '../testing-internal/samples.js';

describe('round trip of every kind', () => {
  test('the samples apply', async () => {
    const h = harness();
    const r = await h.run('apply -f -', { stdin: SAMPLE_DOCUMENTS });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`Successfully applied ${SAMPLE_RESOURCES.length} resource(s)\n`);
  });

  test.each(SAMPLE_RESOURCES)(
    'get -o yaml of $kind re-applied writes nothing',
    async ({ kind, name, namespace }) => {
      const h = harness();
      await h.run('apply -f -', { stdin: SAMPLE_DOCUMENTS });
      const ns = namespace ? ` -n ${namespace}` : '';
      const yaml = await h.run(`get ${kind} ${name}${ns} -o yaml`);
      expect(yaml.code).toBe(0);
      const before = await h.dump();
      const rev = await h.store.revision();
      const r = await h.run('apply -f -', { stdin: yaml.stdout });
      expect(r).toEqual({ code: 0, stdout: `Successfully applied 1 '${kind}' resource(s)\n`, stderr: '' });
      expect(await h.store.revision()).toBe(rev);
      expect(await h.dump()).toEqual(before);
      // And the list form of the same kind.
      const list = await h.run(`get ${kind}${namespace ? ' -A' : ''} -o yaml`);
      const r2 = await h.run('apply -f -', { stdin: list.stdout });
      expect(r2.code).toBe(0);
      expect(await h.store.revision()).toBe(rev);
    },
  );

  test('ClusterInformation from get -o yaml is refused as read-only and nothing changes', async () => {
    const h = harness();
    await h.run('apply -f -', { stdin: SAMPLE_DOCUMENTS });
    const yaml = (await h.run('get clusterinformation default -o yaml')).stdout;
    const before = await h.dump();
    const r = await h.run('apply -f -', { stdin: yaml });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'operation apply is not supported on ClusterInformation: resource is readonly',
    );
    expect(await h.dump()).toEqual(before);
  });
});
