import { describe, expect, test } from 'vitest';
import { parseBirdProtocols, renderPeerTable } from './bird-status.js';

// Captured from BIRD 2.0.12 (Debian bird2) over its control socket.
const BIRD2 =
  '0001 BIRD 2.0.12 ready.\n2002-Name       Proto      Table      State  Since         Info\n1002-device1    Device     ---        up     08:54:54.661  \n Mesh_198_18_0_2 BGP        ---        start  08:54:54.661  Passive       \n0000 \n';

// The shape upstream's tests use (BIRD 1.x).
const BIRD1 = `0001 BIRD 1.5.0 ready.
2002-name     proto    table    state  since       info
1002-kernel1  Kernel   master   up     2016-11-21
 device1  Device   master   up     2016-11-21
 direct1  Direct   master   up     2016-11-21
 Mesh_172_17_8_102 BGP      master   up     2016-11-21  Established
 Global_172_17_8_133 BGP      master   start  2016-11-21  Passive
 Node_fd80_24e2_f998_72d7__2 BGP      master   up     2016-11-21  Established   extra info
0000
`;

describe('parseBirdProtocols', () => {
  test('BIRD 2', () => {
    expect(parseBirdProtocols(BIRD2, '4')).toEqual([
      {
        peerIP: '198.18.0.2',
        peerType: 'node-to-node mesh',
        state: 'start',
        since: '08:54:54.661',
        info: 'Passive',
      },
    ]);
  });
  test('BIRD 1, IPv4 and IPv6 names, extra info', () => {
    expect(parseBirdProtocols(BIRD1, '4').map((p) => [p.peerIP, p.peerType, p.info])).toEqual([
      ['172.17.8.102', 'node-to-node mesh', 'Established'],
      ['172.17.8.133', 'global', 'Passive'],
      ['fd80.24e2.f998.72d7..2', 'node specific', 'Established extra info'],
    ]);
    expect(parseBirdProtocols(BIRD1, '6')[2]!.peerIP).toBe('fd80:24e2:f998:72d7::2');
  });
  test('peers on another port', () => {
    const reply =
      '0001 BIRD 2.0.12 ready.\n2002-Name Proto Table State Since Info\n1002-Node_198_18_0_3_port_1179 BGP --- up 10:00:00.000 Established\n0000\n';
    expect(parseBirdProtocols(reply, '4')[0]!.peerIP).toBe('198.18.0.3:1179');
  });
  test('an unknown table format and unexpected lines are errors', () => {
    expect(() => parseBirdProtocols('2002-name proto\n0000\n', '4')).toThrow(
      'unknown BIRD table output format',
    );
    expect(() => parseBirdProtocols('9999 what\n', '4')).toThrow('unexpected output line from BIRD');
  });
});

test('renderPeerTable draws the table as upstream does', () => {
  expect(
    renderPeerTable([
      {
        peerIP: '172.17.8.102',
        peerType: 'node-to-node mesh',
        state: 'up',
        since: '23:30:04',
        info: 'Established',
      },
    ]),
  ).toBe(`+--------------+-------------------+-------+----------+-------------+
| PEER ADDRESS |     PEER TYPE     | STATE |  SINCE   |    INFO     |
+--------------+-------------------+-------+----------+-------------+
| 172.17.8.102 | node-to-node mesh | up    | 23:30:04 | Established |
+--------------+-------------------+-------+----------+-------------+
`);
});
