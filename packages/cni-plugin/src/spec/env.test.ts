import { describe, expect, it } from 'vitest';
import type { CniPluginError } from '../errors.js';
import { parseCniArgs, workloadIdentity } from './cni-args.js';
import { parseInvocation, requiredEnv } from './env.js';

const base = {
  CNI_CONTAINERID: 'abc123',
  CNI_NETNS: '/run/netns/p',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
};

function errorOf(f: () => unknown): CniPluginError {
  try {
    f();
  } catch (e) {
    return e as CniPluginError;
  }
  throw new Error('no error');
}

describe('parseInvocation', () => {
  it('required variables per command follow the spec', () => {
    expect(requiredEnv('ADD')).toEqual(['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME']);
    expect(requiredEnv('DEL')).toEqual(['CNI_CONTAINERID', 'CNI_IFNAME']);
    expect(requiredEnv('CHECK')).toEqual(['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH']);
    expect(requiredEnv('VERSION')).toEqual([]);
    expect(requiredEnv('STATUS')).toEqual([]);
    expect(requiredEnv('GC')).toEqual(['CNI_PATH']);
  });

  it('parses a full ADD', () => {
    const inv = parseInvocation({
      ...base,
      CNI_COMMAND: 'ADD',
      CNI_ARGS: 'K8S_POD_NAME=p;K8S_POD_NAMESPACE=ns',
      CNI_PATH: '/a::/b',
    });
    expect(inv).toMatchObject({
      command: 'ADD',
      containerId: 'abc123',
      netns: '/run/netns/p',
      ifName: 'eth0',
      path: ['/a', '/b'],
    });
    expect(inv.args.podName).toBe('p');
  });

  it('DEL without CNI_NETNS and CNI_PATH is fine', () => {
    expect(parseInvocation({ CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'a', CNI_IFNAME: 'eth0' }).netns).toBe('');
  });

  it.each([
    [{ CNI_COMMAND: 'ADD' }, 'required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME] missing'],
    [{ ...base, CNI_COMMAND: 'ADD', CNI_NETNS: '' }, 'required env variables [CNI_NETNS] missing'],
    [{ ...base, CNI_COMMAND: 'CHECK', CNI_PATH: undefined }, 'required env variables [CNI_PATH] missing'],
    [{ CNI_COMMAND: 'GC' }, 'required env variables [CNI_PATH] missing'],
    [{ ...base }, 'required env variables [CNI_COMMAND] missing'],
    [{ ...base, CNI_COMMAND: 'add' }, 'unknown CNI_COMMAND: add'],
    [{ ...base, CNI_COMMAND: 'ADD', CNI_CONTAINERID: '-abc' }, 'CNI_CONTAINERID: invalid characters'],
    [{ ...base, CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'a/b' }, 'CNI_CONTAINERID: invalid characters'],
    [
      { ...base, CNI_COMMAND: 'ADD', CNI_IFNAME: 'averyveryverylongname' },
      'CNI_IFNAME: interface name "averyveryverylongname" is too long',
    ],
    [{ ...base, CNI_COMMAND: 'ADD', CNI_IFNAME: 'eth:0' }, 'contains "/", ":" or whitespace'],
    [{ ...base, CNI_COMMAND: 'ADD', CNI_IFNAME: '..' }, 'is not allowed'],
    [{ ...base, CNI_COMMAND: 'ADD', CNI_ARGS: 'K8S_POD_NAME' }, 'CNI_ARGS: invalid pair "K8S_POD_NAME"'],
    [
      { ...base, CNI_COMMAND: 'ADD', CNI_ARGS: 'IP=10.0.0.300' },
      'CNI_ARGS: IP=10.0.0.300 is not an IP address',
    ],
  ])('%j → code 4: %s', (env, msg) => {
    const e = errorOf(() => parseInvocation(env));
    expect(e.code).toBe('invalid-env');
    expect(e.message).toContain(msg);
  });
});

describe('CNI_ARGS', () => {
  it('reads the keys calico uses and ignores the rest', () => {
    const a = parseCniArgs(
      'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=22-my-nginx-2523304718-7stgs;K8S_POD_INFRA_CONTAINER_ID=xxxxxxxxxxxxxxxx;FOO=bar=baz;;',
    );
    expect(a).toMatchObject({
      podNamespace: 'default',
      podName: '22-my-nginx-2523304718-7stgs',
      infraContainerId: 'xxxxxxxxxxxxxxxx',
    });
    expect(a.raw.FOO).toBe('bar=baz');
    expect(workloadIdentity(a)).toEqual({
      orchestrator: 'k8s',
      namespace: 'default',
      pod: '22-my-nginx-2523304718-7stgs',
    });
  });

  it('is a cni workload in namespace default unless both pod namespace and name are set', () => {
    expect(workloadIdentity(parseCniArgs('K8S_POD_NAME=web'))).toEqual({
      orchestrator: 'cni',
      namespace: 'default',
    });
    expect(workloadIdentity(parseCniArgs('K8S_POD_NAMESPACE=ns'))).toEqual({
      orchestrator: 'cni',
      namespace: 'default',
    });
    expect(workloadIdentity(parseCniArgs(''))).toEqual({ orchestrator: 'cni', namespace: 'default' });
    expect(workloadIdentity(parseCniArgs('K8S_POD_NAMESPACE=;K8S_POD_NAME=x'))).toEqual({
      orchestrator: 'cni',
      namespace: 'default',
    });
  });

  it('takes an IPv4 or IPv6 address from IP=', () => {
    expect(parseCniArgs('IP=198.19.0.7').ip).toBe('198.19.0.7');
    expect(parseCniArgs('IP=fd00::7').ip).toBe('fd00::7');
  });
});
