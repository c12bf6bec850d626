import { describe, expect, it } from 'vitest';
import { isLabError } from './errors.js';
import {
  artifacts,
  CALICO_CRDS,
  checkArtifacts,
  checkKernelIpip,
  checkSystemPrograms,
  type IpRunner,
  kubectlPath,
  kubeTools,
  missingPrograms,
  REPO_ROOT,
} from './prereqs.js';

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
      kubeControllers: '/x/calico-kube-controllers',
      typha: '/x/calico-typha',
      listener: '/l',
      prober: '/p',
    };
    expect(() => checkArtifacts(a, (p) => p !== '/x/calicoctl')).toThrow(
      /not built yet: \/x\/calicoctl. Run `pnpm build` first/,
    );
    expect(() => checkArtifacts(a, () => true)).not.toThrow();
  });

  it('finds kube-apiserver, kubectl and openssl for a Kubernetes-datastore lab, or names what is missing', () => {
    const env = { PATH: '/usr/local/bin:/usr/bin' };
    const present = new Set(['/cache/kube-apiserver', '/usr/bin/kubectl', '/usr/bin/openssl', CALICO_CRDS]);
    expect(kubeTools('/cache/kube-apiserver', env, (p) => present.has(p))).toEqual({
      kubeApiServer: '/cache/kube-apiserver',
      kubectl: '/usr/bin/kubectl',
      openssl: '/usr/bin/openssl',
    });
    expect(
      kubeTools('/cache/kube-apiserver', { ...env, CALICO_LAB_KUBECTL_BIN: '/opt/kubectl' }, (p) =>
        present.has(p),
      ).kubectl,
    ).toBe('/opt/kubectl');
    expect(() => kubeTools('/cache/kube-apiserver', env, (p) => p === CALICO_CRDS)).toThrow(
      /the lab's Kubernetes API server needs: kube-apiserver \(\/cache\/kube-apiserver; .\/scripts\/setup.sh builds it\); kubectl \(on PATH, or CALICO_LAB_KUBECTL_BIN; any recent release\); openssl/,
    );
    expect(() => kubectlPath(env, () => false)).toThrow(/missing: kubectl/);
  });

  it('--mode ipip: a kernel without the ipip module is refused with a message naming it; the probe namespace is removed', () => {
    const calls: string[] = [];
    const noModule: IpRunner = (args) => {
      calls.push(args.join(' '));
      return args.includes('type')
        ? { status: 2, stderr: 'Error: Unknown device type.\n' }
        : { status: 0, stderr: '' };
    };
    try {
      checkKernelIpip(noModule, 'probe-ns');
      throw new Error('expected an error');
    } catch (e) {
      expect(isLabError(e, 'prerequisite')).toBe(true);
      expect((e as Error).message).toBe(
        "--mode ipip needs the kernel's ipip module, and this kernel has none: `ip link add type ipip` fails " +
          'with "Error: Unknown device type.". Load it (`modprobe ipip`) on a kernel that ships it, or use ' +
          '--mode bgp or --mode vxlan here',
      );
    }
    expect(calls).toEqual([
      'netns add probe-ns',
      '-n probe-ns link add ipipprobe0 type ipip',
      'netns del probe-ns',
    ]);
    const withModule: IpRunner = () => ({ status: 0, stderr: '' });
    expect(() => checkKernelIpip(withModule, 'probe-ns')).not.toThrow();
  });
});
