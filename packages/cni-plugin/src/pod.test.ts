import { describe, expect, it } from 'vitest';
import { podEndpointFields } from './pod.js';

describe('podEndpointFields', () => {
  it('labels, profiles, service account and the ports upstream keeps', () => {
    const f = podEndpointFields(
      {
        metadata: {
          name: 'web-1',
          namespace: 'shop',
          labels: { app: 'web', 'projectcalico.org/namespace': 'spoof' },
        },
        spec: {
          serviceAccountName: 'web',
          containers: [
            {
              ports: [
                { name: 'http', containerPort: 80 },
                { containerPort: 81 }, // no name, no host port: left out
                { name: 'dns', containerPort: 53, protocol: 'UDP' },
                { containerPort: 8443, hostPort: 443, hostIP: '10.0.0.1' },
                { name: 'odd', containerPort: 7, protocol: 'ICMP' }, // not a port protocol: left out
              ],
            },
          ],
          initContainers: [{ ports: [{ name: 'metrics', containerPort: 9100, protocol: 'SCTP' }] }],
        },
      },
      'shop',
    );
    expect(f).toEqual({
      labels: {
        app: 'web',
        'projectcalico.org/namespace': 'shop',
        'projectcalico.org/orchestrator': 'k8s',
        'projectcalico.org/serviceaccount': 'web',
      },
      profiles: ['kns.shop', 'ksa.shop.web'],
      serviceAccountName: 'web',
      ports: [
        { name: 'http', protocol: 'TCP', port: 80, hostPort: 0, hostIP: '' },
        { name: 'dns', protocol: 'UDP', port: 53, hostPort: 0, hostIP: '' },
        { name: '', protocol: 'TCP', port: 8443, hostPort: 443, hostIP: '10.0.0.1' },
        { name: 'metrics', protocol: 'SCTP', port: 9100, hostPort: 0, hostIP: '' },
      ],
    });
  });

  it('no service account: no ksa profile or label; a long one keeps the profile but not the label', () => {
    expect(podEndpointFields({ metadata: { name: 'p' } }, 'ns').profiles).toEqual(['kns.ns']);
    const long = 'a'.repeat(63);
    const f = podEndpointFields({ metadata: { name: 'p' }, spec: { serviceAccountName: long } }, 'ns');
    expect(f.profiles).toEqual(['kns.ns', `ksa.ns.${long}`]);
    expect(f.labels).not.toHaveProperty('projectcalico.org/serviceaccount');
  });
});
