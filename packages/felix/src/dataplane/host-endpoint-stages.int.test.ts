/**
 * Pre-DNAT and untracked (doNotTrack) host endpoint policy with real traffic: a "host" network
 * namespace whose veth is a host endpoint, programmed by NftablesDataplane from the rendered
 * ruleset, and a "client" namespace on the other end with several source addresses. Pings from
 * each source show what passes; the host namespace's /proc/net/nf_conntrack shows which flows
 * conntrack saw. Needs root, ip, nft, ping and a kernel with nf_conntrack.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { NftContext } from '@calico-ts/nftables';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CalcGraph } from '../calc/calc-graph.js';
import { gnp, hep } from '../calc/testing-internal/resources.js';
import type { CalcResource } from '../calc/types.js';
import { DEFAULT_RULES_CONFIG } from '../rules/config.js';
import { renderRuleset } from '../rules/ruleset-renderer.js';
import { NftablesDataplane } from './nftables-dataplane.js';

function missing(): string | undefined {
  if (process.getuid?.() !== 0) return 'root';
  for (const t of ['ip', 'nft', 'ping']) {
    if (spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0) return t;
  }
  return undefined;
}
const why = missing();
if (why !== undefined && process.env.CI === 'true') {
  throw new Error(`host-endpoint-stages.int.test needs ${why} (CI=true: prerequisites are required)`);
}

const tag = randomBytes(3).toString('hex');
const hostNs = `fxhs-${tag}-h`;
const clientNs = `fxhs-${tag}-c`;
const HEP_IFACE = 'hep0';
const subnet = `198.18.${randomInt(100, 250)}`;
const HOST = `${subnet}.1`;
/** Client source addresses, one per role so that conntrack entries of one check never meet another. */
const SRC = {
  preAllowed: `${subnet}.2`,
  preDenied: `${subnet}.3`,
  untracked: `${subnet}.4`,
  tracked: `${subnet}.5`,
  untrackedDenied: `${subnet}.6`,
};

function render(resources: CalcResource[]) {
  const g = new CalcGraph({ hostname: 'node1' });
  for (const r of resources) g.onUpdate({ kind: 'set', resource: r });
  g.flush();
  return renderRuleset(g.state(), { ...DEFAULT_RULES_CONFIG, ipv6Support: false });
}

/** The host endpoint on hep0; `open` gives it the allow-all profile, so normal policy allows all. */
const hostEndpoint = (open: boolean) =>
  hep('h', {
    labels: { role: 'host' },
    ips: [HOST],
    iface: HEP_IFACE,
    profiles: open ? ['projectcalico-default-allow'] : [],
  });
const net = (a: string) => ({ nets: [`${a}/32`] });

function ping(src: string): boolean {
  const r = spawnSync('ip', ['netns', 'exec', clientNs, 'ping', '-c', '1', '-W', '1', '-I', src, HOST], {
    encoding: 'utf8',
  });
  return r.status === 0;
}

/** The host namespace's conntrack table lines that mention `src=<addr> `. */
function conntrackEntriesFrom(addr: string): string[] {
  const text = execFileSync('ip', ['netns', 'exec', hostNs, 'cat', '/proc/net/nf_conntrack'], {
    encoding: 'utf8',
  });
  return text.split('\n').filter((l) => l.includes(`src=${addr} `));
}

describe.skipIf(why !== undefined)('host endpoint pre-DNAT and untracked policy in real namespaces', () => {
  let ctx: NftContext | undefined;
  let dp: NftablesDataplane;

  async function program(resources: CalcResource[]): Promise<void> {
    const desired = render(resources);
    await dp.apply(desired);
    // The kernel's print of everything (notrack included) reads back as programmed.
    expect(await dp.resync(desired)).toEqual({ mode: 'resync', commands: 0 });
  }

  beforeAll(async () => {
    try {
      execFileSync('ip', ['netns', 'add', hostNs]);
      execFileSync('ip', ['netns', 'add', clientNs]);
      execFileSync('ip', ['-n', hostNs, 'link', 'add', HEP_IFACE, 'type', 'veth', 'peer', 'name', 'cl0']);
      execFileSync('ip', ['-n', hostNs, 'link', 'set', 'cl0', 'netns', clientNs]);
      execFileSync('ip', ['-n', hostNs, 'addr', 'add', `${HOST}/24`, 'dev', HEP_IFACE]);
      for (const a of Object.values(SRC)) {
        execFileSync('ip', ['-n', clientNs, 'addr', 'add', `${a}/24`, 'dev', 'cl0']);
      }
      for (const [ns, dev] of [
        [hostNs, HEP_IFACE],
        [hostNs, 'lo'],
        [clientNs, 'cl0'],
        [clientNs, 'lo'],
      ] as const) {
        execFileSync('ip', ['-n', ns, 'link', 'set', dev, 'up']);
      }
      ctx = await NftContext.open({ netns: hostNs });
      dp = new NftablesDataplane({ nft: ctx });
    } catch (e) {
      await ctx?.close();
      spawnSync('ip', ['netns', 'del', hostNs]);
      spawnSync('ip', ['netns', 'del', clientNs]);
      throw e;
    }
  }, 30_000);

  afterAll(async () => {
    await ctx?.close();
    // Deleting the namespaces removes the veth pair and the calico tables with them.
    spawnSync('ip', ['netns', 'del', hostNs]);
    spawnSync('ip', ['netns', 'del', clientNs]);
  });

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
