import { describe, expect, test } from 'vitest';
import { isBirdBridgeError } from '../errors.js';
import {
  parseConfigure,
  parseProtocols,
  parseReplies,
  parseRoutes,
  parseStatus,
  ReplySplitter,
} from './control-protocol.js';
import * as rec from './testdata/recorded-replies.js';

const one = (text: string) => {
  const r = parseReplies(text);
  expect(r).toHaveLength(1);
  return r[0]!;
};

describe('reply splitting', () => {
  test('numbered lines, continuations and the end line', () => {
    const r = one(rec.status);
    expect(r.code).toBe(13);
    expect(r.message).toBe('Daemon is up and running');
    expect(r.lines.map((l) => l.code)).toEqual([1000, 1011, 1011, 1011, 1011, 1011, 13]);
    expect(r.lines[2]!.text).toBe('Hostname is vm');
  });
  test('a reply split across chunks at any byte comes out once, whole', () => {
    const text = rec.hello + rec.protocolsEstablished;
    for (let cut = 1; cut < text.length; cut += 7) {
      const s = new ReplySplitter();
      const got = [...s.push(text.slice(0, cut)), ...s.push(text.slice(cut))];
      expect(got.map((r) => r.code)).toEqual([1, 0]);
      expect(s.pending).toBe(false);
    }
  });
  test('garbage is a protocol error', () => {
    expect(() => new ReplySplitter().push('HTTP/1.1 400 Bad Request\n')).toThrowError(
      /not a BIRD reply line/,
    );
    expect(() => parseReplies('1002-row\n row')).toThrowError(/ends before its final line/);
    try {
      new ReplySplitter().push(' orphan\n');
    } catch (e) {
      expect(isBirdBridgeError(e, 'control-protocol')).toBe(true);
    }
  });
});

describe('show protocols', () => {
  test('established mesh', () => {
    expect(parseProtocols(one(rec.protocolsEstablished))).toEqual([
      { name: 'static1', proto: 'Static', table: 'master4', state: 'up', since: '09:07:34.637', info: '' },
      { name: 'kernel1', proto: 'Kernel', table: 'master4', state: 'up', since: '09:07:34.637', info: '' },
      { name: 'device1', proto: 'Device', table: '---', state: 'up', since: '09:07:34.637', info: '' },
      { name: 'direct1', proto: 'Direct', table: '---', state: 'up', since: '09:07:34.637', info: '' },
      {
        name: 'Mesh_198_18_0_2',
        proto: 'BGP',
        table: '---',
        state: 'up',
        since: '09:07:36.607',
        info: 'Established',
      },
    ]);
  });
  test('sessions still starting, with the reason in info', () => {
    const rows = parseProtocols(one(rec.protocolsStarting));
    expect(rows.filter((r) => r.proto === 'BGP').map((r) => [r.name, r.state, r.info])).toEqual([
      ['Mesh_198_18_0_2', 'start', 'Passive'],
      ['Global_198_18_0_9', 'start', 'Active        Socket: Network is unreachable'],
    ]);
  });
  test('a long since (iso long) is kept whole', () => {
    const rows = parseProtocols(
      one(
        '2002-Name Proto Table State Since Info\n1002-Mesh_1 BGP --- up 2026-11-22 09:07:36  Established\n0000 \n',
      ),
    );
    expect(rows[0]).toMatchObject({ since: '2026-11-22 09:07:36', info: 'Established' });
  });
  test('an error reply throws command-failed with BIRD text', () => {
    expect(() => parseProtocols(one(rec.commandSyntaxError))).toThrowError(
      'syntax error, unexpected PROTOCOL',
    );
  });
});

describe('show route', () => {
  test('blackhole, device and BGP routes with their next hops', () => {
    expect(parseRoutes(one(rec.routes))).toEqual([
      {
        table: 'master4',
        network: '198.19.0.0/26',
        type: 'blackhole',
        protocol: 'static1',
        since: '09:07:34.637',
        primary: true,
        preference: 200,
        attributes: {},
      },
      {
        table: 'master4',
        network: '198.18.0.0/24',
        type: 'unicast',
        protocol: 'direct1',
        since: '09:07:34.638',
        primary: true,
        preference: 240,
        interface: 'bbp-a',
        attributes: {},
      },
      {
        table: 'master4',
        network: '198.19.0.64/26',
        type: 'unicast',
        protocol: 'Mesh_198_18_0_2',
        since: '09:07:36.638',
        primary: true,
        preference: 100,
        origin: 'i',
        gateway: '198.18.0.2',
        interface: 'bbp-a',
        attributes: {},
      },
    ]);
  });
  test('show route all adds the attributes', () => {
    const bgp = parseRoutes(one(rec.routesAll)).find((r) => r.protocol.startsWith('Mesh_'))!;
    expect(bgp.attributes).toEqual({
      Type: 'BGP univ',
      'BGP.origin': 'IGP',
      'BGP.as_path': '',
      'BGP.next_hop': '198.18.0.2',
      'BGP.local_pref': '100',
    });
  });
});

describe('show status and configure', () => {
  test('status fields', () => {
    expect(parseStatus(one(rec.status))).toEqual({
      version: '2.0.12',
      routerId: '198.18.0.1',
      hostname: 'vm',
      serverTime: '2026-11-23 09:07:42.746',
      lastReboot: '2026-11-23 09:07:34.637',
      lastReconfiguration: '2026-11-23 09:07:34.637',
      message: 'Daemon is up and running',
      code: 13,
    });
  });
  test('configure: reconfigured, and errors with file:line:col', () => {
    expect(parseConfigure(one(rec.configureOk))).toEqual({ code: 3, message: 'Reconfigured' });
    expect(() => parseConfigure(one(rec.configureSyntaxError))).toThrowError(
      /bird\.cfg:43:11 syntax error, unexpected ';'/,
    );
    expect(() => parseConfigure(one(rec.configureMissingFile))).toThrowError(
      '/nonexistent.cfg: No such file or directory',
    );
  });
});
