import { describe, expect, it } from 'vitest';
import { foldFieldCase } from './field-case.js';
import { validateResource } from './validate.js';

describe('field names without regard to case', () => {
  it("reads upstream's own `loadbalancer` spelling as loadBalancer, and says so", () => {
    const doc = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'KubeControllersConfiguration',
      metadata: { name: 'default', Labels: { Team: 'Net' } },
      spec: {
        controllers: {
          loadbalancer: { assignIPs: 'AllServices' },
          Node: {
            hostEndpoint: {
              templates: [{ GenerateName: 'x', interfacePattern: 'eth0', labels: { KeepMe: 'v' } }],
            },
          },
        },
      },
    };
    const { doc: out, folded } = foldFieldCase(doc);
    expect(folded).toEqual([
      { path: 'metadata.Labels', canonical: 'metadata.labels' },
      { path: 'spec.controllers.loadbalancer', canonical: 'spec.controllers.loadBalancer' },
      { path: 'spec.controllers.Node', canonical: 'spec.controllers.node' },
      {
        path: 'spec.controllers.node.hostEndpoint.templates[0].GenerateName',
        canonical: 'spec.controllers.node.hostEndpoint.templates[0].generateName',
      },
    ]);
    // Map keys (labels) are data: never folded.
    expect(out).toEqual({
      apiVersion: 'projectcalico.org/v3',
      kind: 'KubeControllersConfiguration',
      metadata: { name: 'default', labels: { Team: 'Net' } },
      spec: {
        controllers: {
          loadBalancer: { assignIPs: 'AllServices' },
          node: {
            hostEndpoint: {
              templates: [{ generateName: 'x', interfacePattern: 'eth0', labels: { KeepMe: 'v' } }],
            },
          },
        },
      },
    });
    expect(validateResource(out).ok).toBe(true);
    // The input is not changed.
    expect(doc.spec.controllers).toHaveProperty('loadbalancer');
  });

  it('leaves a key alone when its canonical spelling is also given, so validation names it', () => {
    const doc = {
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: 'p' },
      spec: { cidr: '198.19.0.0/16', CIDR: '198.20.0.0/16' },
    };
    const { doc: out, folded } = foldFieldCase(doc);
    expect(folded).toEqual([]);
    const r = validateResource(out);
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(r.errors).toContainEqual({
        path: 'spec.CIDR',
        rule: 'is not a known field; did you mean "cidr"?',
      });
  });

  it('returns documents of unknown kinds unchanged', () => {
    const doc = { kind: 'Nope', spec: { A: 1 } };
    expect(foldFieldCase(doc)).toEqual({ doc, folded: [] });
  });
});
