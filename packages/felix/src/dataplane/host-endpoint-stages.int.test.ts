/**
 * Pre-DNAT and untracked (doNotTrack) host endpoint policy with real traffic: a "host" network
 * namespace whose veth is a host endpoint, programmed by NftablesDataplane from the rendered
 * ruleset, and a "client" namespace on the other end with several source addresses. Pings from
 * each source show what passes; the host namespace's /proc/net/nf_conntrack shows which flows
 * conntrack saw. Needs root, ip, nft, ping and a kernel with nf_conntrack.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gnp, hep } from '../calc/testing-internal/resources.js';
import type { CalcResource } from '../calc/types.js';
import { HostClientPair, hostEndpointTestPrerequisite } from './testing-internal/host-client-pair.js';

const why = hostEndpointTestPrerequisite('host-endpoint-stages.int.test');
const pair = new HostClientPair('fxhs', 'hep0');
const { hostNs, host: HOST } = pair;
const HEP_IFACE = pair.hostIface;
/** Client source addresses, one per role so that conntrack entries of one check never meet another. */
const SRC = {
  preAllowed: pair.addr(2),
  preDenied: pair.addr(3),
  untracked: pair.addr(4),
  tracked: pair.addr(5),
  untrackedDenied: pair.addr(6),
};

/** The host endpoint on hep0; `open` gives it the allow-all profile, so normal policy allows all. */
const hostEndpoint = (open: boolean) =>
  hep('h', {
    labels: { role: 'host' },
    ips: [HOST],
    iface: HEP_IFACE,
    profiles: open ? ['projectcalico-default-allow'] : [],
  });
const net = (a: string) => ({ nets: [`${a}/32`] });

const ping = (src: string) => pair.ping(src);

/** The host namespace's conntrack table lines that mention `src=<addr> `. */
function conntrackEntriesFrom(addr: string): string[] {
  const text = execFileSync('ip', ['netns', 'exec', hostNs, 'cat', '/proc/net/nf_conntrack'], {
    encoding: 'utf8',
  });
  return text.split('\n').filter((l) => l.includes(`src=${addr} `));
}

describe.skipIf(why !== undefined)('host endpoint pre-DNAT and untracked policy in real namespaces', () => {
  const program = (resources: CalcResource[]) => pair.program(resources);

  beforeAll(() => pair.setUp(Object.values(SRC)), 30_000);
  afterAll(() => pair.tearDown());

  it('a pre-DNAT Deny for one source drops it while another source passes', async () => {
    await program([hostEndpoint(true)]);
    expect(ping(SRC.preAllowed)).toBe(true);
    expect(ping(SRC.preDenied)).toBe(true);
    await program([
      hostEndpoint(true),
      gnp('pre-deny', {
        selector: "role == 'host'",
        preDNAT: true,
        applyOnForward: true,
        ingress: [{ action: 'Deny', source: net(SRC.preDenied) }],
      }),
    ]);
    expect(ping(SRC.preDenied)).toBe(false);
    // No pre-DNAT verdict for this source: the normal (allow-all) policy decides.
    expect(ping(SRC.preAllowed)).toBe(true);
  });

  it('a pre-DNAT Allow passes a source that normal host endpoint policy would drop', async () => {
    await program([hostEndpoint(false)]);
    expect(ping(SRC.preAllowed)).toBe(false);
    await program([
      hostEndpoint(false),
      gnp('pre-allow', {
        selector: "role == 'host'",
        preDNAT: true,
        applyOnForward: true,
        ingress: [{ action: 'Allow', source: net(SRC.preAllowed) }],
      }),
    ]);
    expect(ping(SRC.preAllowed)).toBe(true);
    expect(ping(SRC.preDenied)).toBe(false);
  });

  it('a doNotTrack Allow passes traffic without a conntrack entry; tracked traffic has one', async () => {
    // Normal policy drops everything: only the untracked policy lets SRC.untracked through, both
    // the request (ingress) and the reply (egress).
    await program([
      hostEndpoint(false),
      gnp('dnt-allow', {
        selector: "role == 'host'",
        doNotTrack: true,
        applyOnForward: true,
        ingress: [{ action: 'Allow', source: net(SRC.untracked) }],
        egress: [{ action: 'Allow', destination: net(SRC.untracked) }],
      }),
    ]);
    expect(ping(SRC.untracked)).toBe(true);
    expect(ping(SRC.tracked)).toBe(false);
    expect(conntrackEntriesFrom(SRC.untracked)).toEqual([]);

    // The same check sees tracked traffic: allowed by normal policy, it leaves an entry.
    await program([hostEndpoint(true)]);
    expect(ping(SRC.tracked)).toBe(true);
    expect(conntrackEntriesFrom(SRC.tracked).length).toBeGreaterThan(0);
  });

  it('a doNotTrack Deny drops traffic that normal policy allows', async () => {
    await program([
      hostEndpoint(true),
      gnp('dnt-deny', {
        selector: "role == 'host'",
        doNotTrack: true,
        applyOnForward: true,
        ingress: [{ action: 'Deny', source: net(SRC.untrackedDenied) }],
      }),
    ]);
    expect(ping(SRC.untrackedDenied)).toBe(false);
    expect(ping(SRC.preAllowed)).toBe(true);
  });
});
