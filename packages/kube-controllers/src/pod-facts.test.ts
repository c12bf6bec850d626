import { describe, expect, it } from 'vitest';
import { podFacts } from './node-controller.js';

describe('podFacts', () => {
  it('takes the CNI plugin’s annotations before the status, and the node the Pod is bound to', () => {
    expect(
      podFacts({
        metadata: {
          name: 'a',
          namespace: 'web',
          annotations: { 'cni.projectcalico.org/podIPs': '198.19.0.5/32,fd00::5/128' },
        },
        spec: { nodeName: 'n1' },
        status: { phase: 'Running', podIP: '198.19.0.9', podIPs: [{ ip: '198.19.0.9' }] },
      }),
    ).toEqual({ nodeName: 'n1', addresses: ['198.19.0.5', 'fd00::5'], reported: true, evicted: false });
  });

  it('a Pod whose status shows no address has not reported one, whatever its annotations', () => {
    expect(
      podFacts({
        metadata: { name: 'a', annotations: { 'cni.projectcalico.org/podIP': '198.19.0.5/32' } },
        status: { phase: 'Pending' },
      }),
    ).toMatchObject({ addresses: ['198.19.0.5'], reported: false });
  });

  it('an evicted Pod is told apart from one that failed otherwise', () => {
    const failed = (reason?: string) =>
      podFacts({
        metadata: { name: 'a' },
        status: { phase: 'Failed', podIP: '198.19.0.5', ...(reason ? { reason } : {}) },
      }).evicted;
    expect([failed('Evicted'), failed('OOMKilled'), failed()]).toEqual([true, false, false]);
  });
});
