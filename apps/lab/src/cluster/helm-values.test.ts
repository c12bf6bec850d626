import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../prereqs.js';
import { labOperatorValues, PRESET_FILES } from './helm-values.js';
import { eniConflist, eniWrapper, nodePodCidrs } from './other-cni.js';

const preset = (name: 'eks' | 'aks') =>
  labOperatorValues(readFileSync(join(REPO_ROOT, PRESET_FILES[name]), 'utf8'), name, true);

describe('lab up --kubelet --install operator-helm --helm-values', () => {
  it('eks: upstream’s values as written, and the lab gives the nodes the Amazon VPC CNI’s stand-in', () => {
    const v = preset('eks');
    expect(v.spec).toEqual({ kubernetesProvider: 'EKS' });
    expect(v.text).toBe(readFileSync(join(REPO_ROOT, PRESET_FILES.eks), 'utf8'));
    expect(v.needs).toEqual({ eniCni: true, aksNodeLabel: false });
  });

  it('aks: upstream’s values with the pool’s CIDR moved into the lab’s range; AKS’s node label', () => {
    const v = preset('aks');
    expect(v.spec).toEqual({
      kubernetesProvider: 'AKS',
      cni: { type: 'Calico' },
      calicoNetwork: { bgp: 'Disabled', ipPools: [{ cidr: '198.19.0.0/16', encapsulation: 'VXLAN' }] },
    });
    // Only the CIDR changed.
    expect(v.text).toBe(
      readFileSync(join(REPO_ROOT, PRESET_FILES.aks), 'utf8').replace('10.244.0.0/16', '198.19.0.0/16'),
    );
    expect(v.needs).toEqual({ eniCni: false, aksNodeLabel: true });
  });

  it('a file of the user’s is taken as written, and refused when the lab could not run it', () => {
    const ok = labOperatorValues(
      'installation:\n  calicoNetwork:\n    bgp: Disabled\n    ipPools: [{cidr: 198.19.0.0/16}]\n',
      'v.yaml',
      false,
    );
    expect(ok.needs).toEqual({ eniCni: false, aksNodeLabel: false });
    const refused = (text: string) => () => labOperatorValues(text, 'v.yaml', false);
    expect(refused('installation:\n  calicoNetwork:\n    ipPools: [{cidr: 10.244.0.0/16}]\n')).toThrow(
      /--helm-values v.yaml: installation.calicoNetwork.ipPools\[0\].cidr "10.244.0.0\/16" is outside 198.18.0.0\/15/,
    );
    expect(refused('installation:\n  cni: {type: Calico}\n')).toThrow(
      /no installation.calicoNetwork.ipPools, so the chart would add 192.168.0.0\/16/,
    );
    expect(refused('installation:\n  kubernetesProvider: GKE\n')).toThrow(
      /the pods' CNI would be GKE; the lab has a stand-in for the Amazon VPC CNI only/,
    );
    expect(refused('installation:\n  kubernetesProvider: OpenShift\n')).toThrow(
      /the operator would refuse this Installation:\n {2}spec.kubernetesProvider: OpenShift is not supported/,
    );
    expect(refused('installation: [\n')).toThrow(/--helm-values v.yaml: /);
  });

  it('the stand-in CNI: host-local on the node’s range, its state in the node’s directory', () => {
    expect(eniConflist('198.19.2.0/24', '/run/x/nodes/n1/k8s/host-local')).toEqual({
      cniVersion: '1.0.0',
      name: 'lab-eni',
      plugins: [
        {
          type: 'lab-eni',
          mtu: 1500,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: '198.19.2.0/24' }]],
            dataDir: '/run/x/nodes/n1/k8s/host-local',
          },
        },
      ],
    });
    expect(eniWrapper('/usr/bin/node', "/a b/it's.js")).toBe(
      "#!/bin/sh\n# calico-lab: the node's stand-in for the Amazon VPC CNI (apps/lab/src/cluster/eni-cni.ts)\n" +
        "exec '/usr/bin/node' '/a b/it'\\''s.js' \"$@\"\n",
    );
    expect([
      ...nodePodCidrs({
        items: [
          { metadata: { name: 'n1' }, spec: { podCIDR: '198.19.1.0/24' } },
          { metadata: { name: 'n2' } },
        ],
      }),
    ]).toEqual([['n1', '198.19.1.0/24']]);
  });
});
