import { describe, expect, test } from 'vitest';
import { secretKey, secretRefsOf } from './secret-refs.js';
import { bgpConfig, peer } from './testdata/golden-cases.js';

describe('secretRefsOf', () => {
  test('peers and the default mesh password, complete references only, deduplicated and sorted', () => {
    const refs = secretRefsOf(
      [
        bgpConfig('default', { nodeMeshPassword: { secretKeyRef: { name: 'mesh', key: 'pw' } } }),
        // Only `default` carries the mesh password.
        bgpConfig('node.n1', { nodeMeshPassword: { secretKeyRef: { name: 'ignored', key: 'pw' } } }),
      ],
      [
        peer('b', {
          peerIP: '198.18.1.2',
          asNumber: 64600,
          password: { secretKeyRef: { name: 'tor', key: 'b' } },
        }),
        peer('a', {
          peerIP: '198.18.1.1',
          asNumber: 64600,
          password: { secretKeyRef: { name: 'tor', key: 'a' } },
        }),
        peer('a2', {
          peerIP: '198.18.1.3',
          asNumber: 64600,
          password: { secretKeyRef: { name: 'tor', key: 'a' } },
        }),
        peer('nokey', { peerIP: '198.18.1.4', asNumber: 64600, password: { secretKeyRef: { key: '' } } }),
        peer('none', { peerIP: '198.18.1.5', asNumber: 64600 }),
      ],
    );
    expect(refs.map(secretKey)).toEqual(['mesh/pw', 'tor/a', 'tor/b']);
  });

  test('nothing referenced, nothing to follow', () => {
    expect(secretRefsOf([], [peer('p', { peerIP: '198.18.1.1', asNumber: 64600 })])).toEqual([]);
  });
});
