import { describe, expect, test } from 'vitest';
import { memoryIO } from '../io.js';
import { silentLogger } from '../log.js';
import type { NodeHost } from '../node/node-host.js';
import { nodeStatusCommand } from './node.js';

const REPLY =
  '0001 BIRD 2.0.12 ready.\n2002-Name Proto Table State Since Info\n1002-device1 Device --- up 08:54:54.661\n Mesh_198_18_0_2 BGP --- up 08:55:01.000 Established\n0000\n';

function fakeHost(over: Partial<NodeHost> & { procs?: string[][] } = {}): NodeHost {
  return {
    isRoot: () => true,
    processes: async () =>
      over.procs ?? [
        ['/usr/bin/calico-node', '-felix'],
        ['bird', '-R', '-s', '/var/run/calico/bird.ctl'],
      ],
    showProtocols: async () => REPLY,
    ...over,
  };
}

async function run(host: NodeHost) {
  const io = memoryIO();
  try {
    const code = await nodeStatusCommand(host, { io, log: silentLogger });
    return { code, stdout: io.stdoutText };
  } catch (e) {
    return { code: 1, stdout: io.stdoutText, error: (e as Error).message };
  }
}

describe('node status', () => {
  test('agent and BIRD running: the IPv4 peer table, IPv6 noted as not running', async () => {
    expect(await run(fakeHost())).toEqual({
      code: 0,
      stdout: `Calico process is running.

IPv4 BGP status
+--------------+-------------------+-------+--------------+-------------+
| PEER ADDRESS |     PEER TYPE     | STATE |    SINCE     |    INFO     |
+--------------+-------------------+-------+--------------+-------------+
| 198.18.0.2   | node-to-node mesh | up    | 08:55:01.000 | Established |
+--------------+-------------------+-------+--------------+-------------+

INFO: BIRDv6 process: 'bird6' is not running.

`,
    });
  });
  test('not root', async () => {
    expect(await run(fakeHost({ isRoot: () => false }))).toMatchObject({
      code: 1,
      error: 'Need super user privileges: Operation not permitted',
    });
  });
  test('no agent', async () => {
    expect(await run(fakeHost({ procs: [['bird']] }))).toMatchObject({
      code: 1,
      error: 'Calico process is not running.',
    });
  });
  test('no BGP daemon', async () => {
    expect((await run(fakeHost({ procs: [['calico-felix']] }))).stdout).toBe(
      'Calico process is running.\n\nNone of the BGP backend processes (BIRD or GoBGP) are running.\n\n',
    );
  });
  test('no peers', async () => {
    const host = fakeHost({ showProtocols: async () => '0001 BIRD 2.0.12 ready.\n0000\n' });
    expect((await run(host)).stdout).toContain('IPv4 BGP status\nNo IPv4 peers found.\n');
  });
});
