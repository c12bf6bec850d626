import { describe, expect, test } from 'vitest';
import {
  calicoPods,
  choosePodsForLogs,
  clusterBundleName,
  logArgs,
  type PodSummary,
  parseFocusNodes,
  parseMaxLogs,
  parseSince,
} from './diags.js';

const pod = (component: string, name: string, nodeName: string): PodSummary => ({
  namespace: 'kube-system',
  name,
  nodeName,
  component,
});

describe('cluster diags plan', () => {
  test('--since takes s, m or h; anything else is refused naming it', () => {
    expect(parseSince('90s')).toBe('90s');
    expect(parseSince('2h')).toBe('2h');
    expect(() => parseSince('5 minutes')).toThrow('invalid --since "5 minutes"');
    expect(() => parseSince('-1m')).toThrow('invalid --since');
  });

  test('--max-logs is a whole number; --focus-nodes drops blanks', () => {
    expect(parseMaxLogs('0')).toBe(0);
    expect(() => parseMaxLogs('five')).toThrow('invalid --max-logs "five"');
    expect(parseFocusNodes(' n2, ,n1 ')).toEqual(['n2', 'n1']);
    expect(parseFocusNodes(undefined)).toEqual([]);
  });

  test('at most N pods of each component, focus nodes first in their order, the rest by node', () => {
    const pods = [
      pod('calico-node', 'calico-node-a', 'n1'),
      pod('calico-node', 'calico-node-b', 'n2'),
      pod('calico-node', 'calico-node-c', 'n3'),
      pod('calico-node', 'calico-node-d', 'n4'),
      pod('calico-kube-controllers', 'kc-1', 'n4'),
      pod('calico-typha', 'typha-1', 'n1'),
      pod('calico-typha', 'typha-2', 'n3'),
    ];
    expect(choosePodsForLogs(pods, ['n3', 'n2'], 2).map((p) => p.name)).toEqual([
      'calico-node-c',
      'calico-node-b',
      'kc-1',
      'typha-2',
      'typha-1',
    ]);
    expect(choosePodsForLogs(pods, [], 1).map((p) => p.name)).toEqual(['calico-node-a', 'kc-1', 'typha-1']);
    expect(choosePodsForLogs(pods, [], 0)).toEqual([]);
  });

  test('only pods whose k8s-app names a Calico component are log candidates', () => {
    const list = {
      items: [
        {
          metadata: { namespace: 'kube-system', name: 'cn', labels: { 'k8s-app': 'calico-node' } },
          spec: { nodeName: 'n1' },
        },
        {
          metadata: { namespace: 'kube-system', name: 'dns', labels: { 'k8s-app': 'kube-dns' } },
          spec: { nodeName: 'n1' },
        },
        { metadata: { namespace: 'default', name: 'web' } },
      ],
    };
    expect(calicoPods(list)).toEqual([
      { namespace: 'kube-system', name: 'cn', nodeName: 'n1', component: 'calico-node' },
    ]);
    expect(calicoPods('not a list')).toEqual([]);
  });

  test('kubectl logs arguments and the bundle name', () => {
    expect(logArgs(pod('calico-node', 'cn', 'n1'), '10m')).toEqual([
      'logs',
      '-n',
      'kube-system',
      'cn',
      '--all-containers',
      '--timestamps',
      '--since=10m',
    ]);
    expect(logArgs(pod('calico-node', 'cn', 'n1'), undefined)).not.toContain('--since=10m');
    expect(clusterBundleName(new Date(Date.UTC(2026, 10, 27, 9, 5, 3)))).toBe(
      'cluster-diags-20261127_090503.tar.gz',
    );
  });
});
