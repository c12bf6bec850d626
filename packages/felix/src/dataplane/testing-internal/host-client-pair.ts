/**
 * For host endpoint tests with real traffic: a "host" network namespace and a "client" one joined
 * by a veth pair (host end `hostIface`, client end `cl0`) on a random 198.18.x.0/24, the client
 * holding several source addresses, and the host's nftables driven by NftablesDataplane from a
 * CalcGraph's rendered state. `hostEndpointTestPrerequisite` says what is missing (and, under
 * CI=true, fails the file instead of skipping it).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { NftContext } from '@calico-ts/nftables';
import { expect } from 'vitest';
import { CalcGraph } from '../../calc/calc-graph.js';
import type { CalcResource } from '../../calc/types.js';
import { DEFAULT_RULES_CONFIG, type RulesConfig } from '../../rules/config.js';
import { renderRuleset } from '../../rules/ruleset-renderer.js';
import { NftablesDataplane } from '../nftables-dataplane.js';

/** What this machine lacks for these tests (root, ip, nft, ping), or undefined. */
export function hostEndpointTestPrerequisite(testFile: string): string | undefined {
  let why: string | undefined;
  if (process.getuid?.() !== 0) why = 'root';
  for (const t of ['ip', 'nft', 'ping']) {
    if (why === undefined && spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0) why = t;
  }
  if (why !== undefined && process.env.CI === 'true') {
    throw new Error(`${testFile} needs ${why} (CI=true: prerequisites are required)`);
  }
  return why;
}

/** The ruleset node1's Felix renders for `resources` (IPv4 only). */
export function renderFor(resources: CalcResource[], config: RulesConfig = DEFAULT_RULES_CONFIG) {
  const g = new CalcGraph({ hostname: 'node1' });
  for (const r of resources) g.onUpdate({ kind: 'set', resource: r });
  g.flush();
  return renderRuleset(g.state(), { ...config, ipv6Support: false });
}

export class HostClientPair {
  readonly hostNs: string;
  readonly clientNs: string;
  readonly subnet = `198.18.${randomInt(100, 250)}`;
  /** The host end's address. */
  readonly host = `${this.subnet}.1`;
  #ctx: NftContext | undefined;
  #dp: NftablesDataplane | undefined;

  /** `prefix`: a short tag for the namespace names; `hostIface`: the host end of the veth. */
  constructor(
    prefix: string,
    readonly hostIface: string,
  ) {
    const tag = randomBytes(3).toString('hex');
    this.hostNs = `${prefix}-${tag}-h`;
    this.clientNs = `${prefix}-${tag}-c`;
  }

  /** Client address `.n` of the subnet (2…254). */
  addr(n: number): string {
    return `${this.subnet}.${n}`;
  }

  /** Make the namespaces, the veth pair and the client's `sources`; open nftables in the host. */
  async setUp(sources: readonly string[]): Promise<void> {
    try {
      execFileSync('ip', ['netns', 'add', this.hostNs]);
      execFileSync('ip', ['netns', 'add', this.clientNs]);
      execFileSync('ip', [
        '-n',
        this.hostNs,
        'link',
        'add',
        this.hostIface,
        'type',
        'veth',
        'peer',
        'name',
        'cl0',
      ]);
      execFileSync('ip', ['-n', this.hostNs, 'link', 'set', 'cl0', 'netns', this.clientNs]);
      execFileSync('ip', ['-n', this.hostNs, 'addr', 'add', `${this.host}/24`, 'dev', this.hostIface]);
      for (const a of sources)
        execFileSync('ip', ['-n', this.clientNs, 'addr', 'add', `${a}/24`, 'dev', 'cl0']);
      for (const [ns, dev] of [
        [this.hostNs, this.hostIface],
        [this.hostNs, 'lo'],
        [this.clientNs, 'cl0'],
        [this.clientNs, 'lo'],
      ] as const) {
        execFileSync('ip', ['-n', ns, 'link', 'set', dev, 'up']);
      }
      this.#ctx = await NftContext.open({ netns: this.hostNs });
      this.#dp = new NftablesDataplane({ nft: this.#ctx });
    } catch (e) {
      await this.tearDown();
      throw e;
    }
  }

  /** Program what node1's Felix renders for `resources`; a resync then finds nothing to repair. */
  async program(resources: CalcResource[], config: RulesConfig = DEFAULT_RULES_CONFIG): Promise<void> {
    const desired = renderFor(resources, config);
    await this.#dp!.apply(desired);
    // The kernel's print of everything reads back as programmed.
    expect(await this.#dp!.resync(desired)).toEqual({ mode: 'resync', commands: 0 });
  }

  /** One ping from the client, from `src`, to the host end. */
  ping(src: string): boolean {
    const r = spawnSync(
      'ip',
      ['netns', 'exec', this.clientNs, 'ping', '-c', '1', '-W', '1', '-I', src, this.host],
      {
        encoding: 'utf8',
      },
    );
    return r.status === 0;
  }

  /** Close nftables and delete both namespaces (with them the veth pair and the calico tables). */
  async tearDown(): Promise<void> {
    await this.#ctx?.close();
    this.#ctx = undefined;
    spawnSync('ip', ['netns', 'del', this.hostNs]);
    spawnSync('ip', ['netns', 'del', this.clientNs]);
  }
}
