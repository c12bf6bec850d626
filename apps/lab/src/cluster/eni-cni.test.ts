import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  addResult,
  addressOf,
  hostInterfaceName,
  hostSideCommands,
  parseEnv,
  podSideCommands,
} from './eni-cni.js';

describe('lab-eni, the stand-in for the Amazon VPC CNI', () => {
  it('names the host side as the Amazon VPC CNI and Calico’s Kubernetes datastore do', () => {
    const want = `eni${createHash('sha1').update('shop.web-1').digest('hex').slice(0, 11)}`;
    expect(hostInterfaceName('shop', 'web-1')).toBe(want);
    expect(want).toHaveLength(14);
  });

  it('reads the CNI environment, and says what is missing', () => {
    expect(
      parseEnv({
        CNI_COMMAND: 'ADD',
        CNI_CONTAINERID: 'c1',
        CNI_NETNS: '/run/netns/cni-1',
        CNI_IFNAME: 'eth0',
        CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-1;K8S_POD_INFRA_CONTAINER_ID=c1',
      }),
    ).toEqual({
      command: 'ADD',
      containerId: 'c1',
      netns: '/run/netns/cni-1',
      ifName: 'eth0',
      namespace: 'shop',
      pod: 'web-1',
    });
    expect(() => parseEnv({ CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c1', CNI_IFNAME: 'eth0' })).toThrow(
      'CNI_NETNS is required for ADD',
    );
    // DEL may come after the pod's namespace is gone.
    expect(
      parseEnv({
        CNI_COMMAND: 'DEL',
        CNI_CONTAINERID: 'c1',
        CNI_IFNAME: 'eth0',
        CNI_ARGS: 'K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-1',
      }).netns,
    ).toBe('');
  });

  it('wires the pod as the Amazon VPC CNI does: /32, a link-local gateway answered by the host side', () => {
    expect(podSideCommands({ ifName: 'eth0', ip: '198.19.1.5', hostMac: '02:00:00:00:00:01' })).toEqual([
      'addr add 198.19.1.5/32 dev eth0',
      'link set eth0 up',
      'route add 169.254.1.1 dev eth0 scope link',
      'route add default via 169.254.1.1 dev eth0',
      'neigh replace 169.254.1.1 lladdr 02:00:00:00:00:01 dev eth0 nud permanent',
    ]);
    expect(hostSideCommands({ host: 'eni0123456789a', ip: '198.19.1.5' })).toEqual([
      'link set eni0123456789a up',
      'route replace 198.19.1.5/32 dev eni0123456789a scope link',
    ]);
    expect(addressOf({ ips: [{ address: '198.19.1.5/24', gateway: '198.19.1.1' }] })).toBe('198.19.1.5');
    expect(() => addressOf({ ips: [] })).toThrow(/returned no IPv4 address/);
    expect(
      addResult({
        cniVersion: '1.0.0',
        host: 'eniX',
        hostMac: 'h',
        ifName: 'eth0',
        podMac: 'p',
        netns: '/run/netns/cni-1',
        ip: '198.19.1.5',
      }).ips,
    ).toEqual([{ address: '198.19.1.5/32', gateway: '169.254.1.1', interface: 1 }]);
  });
});
