import { describe, expect, it } from 'vitest';
import { isLabError } from './errors.js';
import { artifacts, checkArtifacts, checkSystemPrograms, missingPrograms, REPO_ROOT } from './prereqs.js';

describe('prerequisites', () => {
  it('names each missing program and the Debian package that brings it', () => {
    const present = new Set([
      '/usr/sbin/ip',
      '/usr/bin/nsenter',
      '/usr/bin/etcd',
      '/usr/bin/etcdctl',
      '/usr/sbin/nft',
    ]);
    const exists = (p: string) => present.has(p);
    expect(missingPrograms(exists).map((p) => p.name)).toEqual(['bird', 'libnftables']);
    try {
      checkSystemPrograms(exists);
      throw new Error('expected an error');
    } catch (e) {
      expect(isLabError(e, 'prerequisite')).toBe(true);
      expect((e as Error).message).toBe(
        'missing: bird, libnftables. Install them with `apt-get install bird2 libnftables1` or run ./scripts/setup.sh',
      );
    }
  });
  it('runs the native CNI plugin and calicoctl when they are built, else the Node bundles', () => {
    const rel = (p: string) => p.slice(REPO_ROOT.length).replace(/^\//, '');
    const all = artifacts({}, () => true);
    expect([rel(all.cniPlugin), rel(all.calicoctl)]).toEqual([
      'packages/cni-plugin/bin/native/calico',
      'packages/ctl/bin/native/calicoctl',
    ]);
    const bundles = artifacts({}, (p) => !p.includes('/native/'));
    expect([rel(bundles.cniPlugin), rel(bundles.calicoctl)]).toEqual([
      'packages/cni-plugin/bin/calico.mjs',
      'packages/ctl/bin/calicoctl',
    ]);
    expect(artifacts({ CALICO_LAB_CALICOCTL_BIN: '/opt/calicoctl' }, () => true).calicoctl).toBe(
      '/opt/calicoctl',
    );
  });

  it('asks for a build when an executable is missing', () => {
    const a = {
      calicoNode: '/x/calico-node',
      cniPlugin: '/x/calico.mjs',
      calicoctl: '/x/calicoctl',
      listener: '/l',
      prober: '/p',
    };
    expect(() => checkArtifacts(a, (p) => p !== '/x/calicoctl')).toThrow(
      /not built yet: \/x\/calicoctl. Run `pnpm build` first/,
    );
    expect(() => checkArtifacts(a, () => true)).not.toThrow();
  });
});
