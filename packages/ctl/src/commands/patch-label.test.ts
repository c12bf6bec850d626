import { describe, expect, test } from 'vitest';
import { harness } from '../testing-internal/harness.js';

async function withPool() {
  const h = harness();
  await h.run('apply -f -', {
    stdin:
      'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p, labels: {zone: a}}\nspec: {cidr: 198.19.0.0/16}\n',
  });
  return h;
}

describe('patch', () => {
  test('strategic merge patch of the spec', async () => {
    const h = await withPool();
    const r = await h.run([
      'patch',
      'ippool',
      'p',
      '--patch',
      '{"spec":{"natOutgoing":true,"nodeSelector":"zone == \'a\'"}}',
    ]);
    expect(r).toEqual({ code: 0, stdout: "Successfully patched 1 'IPPool' resource\n", stderr: '' });
    const p = await h.datastore.get('IPPool', 'p');
    expect(p.spec.natOutgoing).toBe(true);
    expect(p.spec.nodeSelector).toBe("zone == 'a'");
  });

  test('null removes a field; json patch works too', async () => {
    const h = await withPool();
    await h.run(['patch', 'ippool', 'p', '-p', '{"metadata":{"labels":{"zone":null,"x":"y"}}}']);
    expect((await h.datastore.get('IPPool', 'p')).metadata.labels).toEqual({ x: 'y' });
    const bad = await h.run([
      'patch',
      'ippool',
      'p',
      '-t',
      'json',
      '-p',
      '[{"op":"replace","path":"/spec/disabled","value":true}]',
    ]);
    expect(bad.stderr).toBe("Failed to patch 'IPPool' resource: path /spec/disabled does not exist\n\n");
    const r = await h.run([
      'patch',
      'ippool',
      'p',
      '-t',
      'json',
      '-p',
      '[{"op":"add","path":"/spec/disabled","value":true}]',
    ]);
    expect(r.code).toBe(0);
    expect((await h.datastore.get('IPPool', 'p')).spec.disabled).toBe(true);
  });

  test("an invalid result is refused with the field named; a missing resource is upstream's error", async () => {
    const h = await withPool();
    const r = await h.run(['patch', 'ippool', 'p', '-p', '{"spec":{"blockSize":99}}']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("Failed to patch 'IPPool' resource: updating existing resource: ");
    expect(r.stderr).toContain('spec.blockSize: must be between 20 and 32 for IPv4');
    expect((await h.datastore.get('IPPool', 'p')).spec.blockSize).toBe(26);
    expect(await h.run(['patch', 'ippool', 'nope', '-p', '{}'])).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "Failed to patch 'IPPool' resource: resource does not exist: IPPool(nope) with error: <nil>\n\n",
    });
  });
});

describe('label', () => {
  test('set, refuse to overwrite, overwrite, remove', async () => {
    const h = await withPool();
    expect(await h.run('label ippool p env=prod')).toEqual({
      code: 0,
      stdout: 'Successfully set label env on ippool p\n',
      stderr: '',
    });
    expect(await h.run('label ippool p env=dev')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "failed to update label of ippool p, key env is already present. please use '--overwrite' to set a new value.\n",
    });
    expect((await h.run('label ippool p env=dev --overwrite')).stdout).toBe(
      'Successfully updated label env on ippool p\n',
    );
    expect((await h.run('label ippool p zone --remove')).stdout).toBe(
      'Successfully removed label zone from ippool p\n',
    );
    expect((await h.datastore.get('IPPool', 'p')).metadata.labels).toEqual({ env: 'dev' });
    expect((await h.run('label ippool p zone --remove')).stderr).toBe(
      'cannot remove label of ippool p, key zone does not exist\n',
    );
    expect(await h.run('label ippool nope a=b')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'ippool nope not found\n',
    });
    expect((await h.run('label ippool p a=b=c')).stderr).toBe('invalid label a=b=c\n');
  });
});
