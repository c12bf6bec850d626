import { describe, expect, test } from 'vitest';
import { harness } from '../testing-internal/harness.js';

describe('validate', () => {
  test('valid documents, offline', async () => {
    const h = harness();
    const r = await h.run('validate -f -', {
      stdin:
        'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\nspec: {cidr: 198.19.0.0/16}\n',
    });
    expect(r).toEqual({ code: 0, stdout: "Successfully validated 1 'IPPool' resource(s)\n", stderr: '' });
    expect(await h.dump()).toEqual({});
  });
  test('invalid documents: every error, lower-case prefix as upstream validate', async () => {
    const h = harness();
    const r = await h.run('validate -f -', {
      stdin:
        'apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\nspec: {cidr: 198.19.0.1/16, vxlanMode: Always, ipipMode: Always}\n',
    });
    expect(r.code).toBe(1);
    expect(
      r.stderr.startsWith('failed to execute command: 1 of 1 document is invalid; nothing was written:\n'),
    ).toBe(true);
    expect(r.stderr).toContain('document 1 of stdin (IPPool "p"): spec.cidr: ');
  });
});

const CI = (version: string) =>
  `apiVersion: projectcalico.org/v3\nkind: ClusterInformation\nmetadata: {name: default}\nspec: {calicoVersion: ${version}, clusterType: "k8s,bgp", datastoreReady: true}\n`;

async function withCluster(version?: string) {
  const h = harness();
  if (version !== undefined) {
    const { decodeDocuments } = await import('@calico-ts/api');
    await h.datastore.create(decodeDocuments(CI(version))[0] as never);
  }
  return h;
}

describe('version', () => {
  test('client and cluster versions', async () => {
    const h = await withCluster('v3.32.1');
    const r = await h.run('version');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      'Client Version:    v3.32.1\nGit commit:        unknown\nCluster Version:   v3.32.1\nCluster Type:      k8s,bgp\n',
    );
  });
  test("no ClusterInformation: the client version, then upstream's error", async () => {
    const h = await withCluster();
    expect(await h.run('version')).toEqual({
      code: 1,
      stdout: 'Client Version:    v3.32.1\nGit commit:        unknown\n',
      stderr:
        'Unable to retrieve Cluster Version or Type: resource does not exist: ClusterInformation(default) with error: <nil>\n',
    });
  });
  test('version itself never checks for a mismatch', async () => {
    const h = await withCluster('v3.31.0');
    expect((await h.run('version')).code).toBe(0);
  });
});

describe('version mismatch check', () => {
  test('a different cluster version stops commands, unless --allow-version-mismatch', async () => {
    const h = await withCluster('v3.31.4-0.dev');
    expect(await h.run('get ippools')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'Version mismatch.\nClient Version:   v3.32.1\nCluster Version:  3.31.4\nUse --allow-version-mismatch to override.\n\n',
    });
    expect((await h.run('get ippools --allow-version-mismatch')).code).toBe(0);
    expect((await h.run('--allow-version-mismatch get ippools')).code).toBe(0);
  });
  test('same release with a suffix passes; no calicoVersion passes; no ClusterInformation passes', async () => {
    expect((await (await withCluster('v3.32.1-12-gabcdef')).run('get ippools')).code).toBe(0);
    expect((await (await withCluster('""')).run('get ippools')).code).toBe(0);
    expect((await (await withCluster()).run('get ippools')).code).toBe(0);
  });
});
