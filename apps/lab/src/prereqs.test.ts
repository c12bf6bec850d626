import { describe, expect, it } from 'vitest';
import { isLabError } from './errors.js';
import { checkArtifacts, checkSystemPrograms, missingPrograms } from './prereqs.js';

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
