import { describe, expect, test } from 'vitest';
import { CtlError } from '../errors.js';
import { renderJson, renderYaml } from './printers.js';
import { listObject, parseOutputFormat, renderTables } from './tables.js';

const pool = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'IPPool',
  metadata: { name: 'pool-a', resourceVersion: '12', uid: 'u-1', creationTimestamp: '2025-01-02T03:04:05Z' },
  spec: { cidr: '10.0.0.0/16', ipipMode: 'Always', natOutgoing: true, nodeSelector: 'all()', blockSize: 26 },
};

describe('parseOutputFormat', () => {
  test.each([
    ['ps', { kind: 'ps' }],
    ['yml', { kind: 'yaml' }],
    ['custom-columns=NAME,CIDR', { kind: 'custom-columns', headings: ['NAME', 'CIDR'] }],
    ['go-template={{.x}}', { kind: 'go-template', template: '{{.x}}' }],
    ['go-template-file=/t', { kind: 'go-template-file', path: '/t' }],
  ])('%s', (text, want) => expect(parseOutputFormat(text)).toEqual(want));
  test.each([
    ['xml', "unrecognized output format 'xml'"],
    ['custom-columns=', 'need to specify at least one column'],
    ['go-template=', 'need to specify a template'],
    ['go-template-file', 'need to specify a template file'],
  ])('%s is refused with upstream text', (text, msg) => {
    expect(() => parseOutputFormat(text)).toThrow(new CtlError('usage', msg));
  });
});

describe('tables', () => {
  test('ps and wide columns of IPPool', () => {
    const r = [listObject('IPPool', [pool], '12')];
    expect(renderTables(r, { wide: false, printNamespace: false })).toBe(
      'NAME     CIDR          SELECTOR   \npool-a   10.0.0.0/16   all()      \n\n',
    );
    expect(renderTables(r, { wide: true, printNamespace: false })).toBe(
      'NAME     CIDR          NAT    IPIPMODE   VXLANMODE   DISABLED   DISABLEBGPEXPORT   SELECTOR   \n' +
        'pool-a   10.0.0.0/16   true   Always     Never       false      false              all()      \n\n',
    );
  });
  test('namespaced kinds get a NAMESPACE column with -n/-A', () => {
    const np = {
      kind: 'NetworkPolicy',
      metadata: { name: 'p', namespace: 'prod' },
      spec: { tier: 'default', order: 100 },
    };
    expect(renderTables([listObject('NetworkPolicy', [np], '1')], { wide: true, printNamespace: true })).toBe(
      'NAMESPACE   NAME   TIER      ORDER   SELECTOR   \nprod        p      default   100                \n\n',
    );
  });
  test('unset pointers print <nil>, unset BGP peer node is (global)', () => {
    const gnp = { kind: 'GlobalNetworkPolicy', metadata: { name: 'g' }, spec: {} };
    const peer = {
      kind: 'BGPPeer',
      metadata: { name: 'p' },
      spec: { peerIP: '198.18.0.9', asNumber: 64513 },
    };
    expect(renderTables([gnp, peer], { wide: true, printNamespace: false })).toBe(
      'NAME   TIER      ORDER   SELECTOR   \ng      default   <nil>              \n\n' +
        'NAME   PEERIP       NODE       ASN     \np      198.18.0.9   (global)   64513   \n\n',
    );
  });
  test('node ASN falls back to the cluster AS number in parentheses', () => {
    const node = { kind: 'Node', metadata: { name: 'n1' }, spec: { bgp: { ipv4Address: '198.18.0.1/24' } } };
    expect(
      renderTables([node], { wide: true, printNamespace: false, cells: { globalASNumber: '64512' } }),
    ).toBe('NAME   ASN       IPV4            IPV6   \nn1     (64512)   198.18.0.1/24          \n\n');
  });
  test('workload endpoints show NATs as Go structs and truncate nothing', () => {
    const wep = {
      kind: 'WorkloadEndpoint',
      metadata: { name: 'w', namespace: 'default' },
      spec: {
        pod: 'web',
        node: 'n1',
        ipNetworks: ['198.19.0.5/32'],
        interfaceName: 'cali1',
        ipNATs: [{ internalIP: '198.19.0.5', externalIP: '198.18.9.9' }],
      },
    };
    expect(renderTables([wep], { wide: true, printNamespace: false })).toBe(
      'NAME   WORKLOAD   NODE   NETWORKS        INTERFACE   PROFILES   NATS                      \n' +
        'w      web        n1     198.19.0.5/32   cali1                  {198.19.0.5 198.18.9.9}   \n\n',
    );
  });
  test('custom columns; unknown heading lists the valid ones', () => {
    expect(renderTables([pool], { wide: false, headings: ['CIDR'], printNamespace: false })).toBe(
      'CIDR          \n10.0.0.0/16   \n\n',
    );
    expect(() => renderTables([pool], { wide: false, headings: ['BOGUS'], printNamespace: false })).toThrow(
      'Unknown heading BOGUS, valid values are: CIDR, DISABLEBGPEXPORT, DISABLED, IPIPMODE, NAME, NAT, SELECTOR, VXLANMODE',
    );
  });
});

describe('yaml and json', () => {
  test('YAML has sorted keys and unindented sequences, like go-yaml', () => {
    expect(renderYaml([{ ...pool, spec: { ...pool.spec, allowedUses: ['Workload'] } }])).toBe(
      `apiVersion: projectcalico.org/v3
kind: IPPool
metadata:
  creationTimestamp: "2025-01-02T03:04:05Z"
  name: pool-a
  resourceVersion: "12"
  uid: u-1
spec:
  allowedUses:
  - Workload
  blockSize: 26
  cidr: 10.0.0.0/16
  ipipMode: Always
  natOutgoing: true
  nodeSelector: all()
`,
    );
  });
  test('several results print as a YAML list; none as []', () => {
    expect(renderYaml([])).toBe('[]\n');
    expect(renderYaml([{ a: 1 }, { b: 2 }])).toBe('- a: 1\n- b: 2\n');
  });
  test('JSON in Go field order with HTML-safe escapes', () => {
    const out = renderJson([{ ...pool, spec: { selector: 'a < b && c' } }]);
    expect(out).toBe(`{
  "kind": "IPPool",
  "apiVersion": "projectcalico.org/v3",
  "metadata": {
    "name": "pool-a",
    "uid": "u-1",
    "resourceVersion": "12",
    "creationTimestamp": "2025-01-02T03:04:05Z"
  },
  "spec": {
    "selector": "a \\u003c b \\u0026\\u0026 c"
  }
}
`);
  });
  test('a list prints as kind, apiVersion, metadata, items', () => {
    expect(JSON.parse(renderJson([listObject('IPPool', [], '3')]))).toEqual({
      kind: 'IPPoolList',
      apiVersion: 'projectcalico.org/v3',
      metadata: { resourceVersion: '3' },
      items: [],
    });
    expect(Object.keys(JSON.parse(renderJson([listObject('IPPool', [], '3')])))).toEqual([
      'kind',
      'apiVersion',
      'metadata',
      'items',
    ]);
  });
});
