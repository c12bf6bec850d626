/**
 * The tunnels as a graph node (upstream `felix/calc/vxlan_resolver.go` and the tunnel half of
 * `l3_route_resolver.go`): this node's VXLAN (IPv4 and IPv6) and IPIP state, and the hosts the
 * rules accept tunnelled packets from, fed by the same dispatcher as the policies.
 *
 *   Node ──────► onNode ──► NodeInfo per node ─────┐
 *   IPAMBlock ─► onBlock ──► BlockRoutes per block ─┤  (a block whose routing facts did not
 *   IPPool ────► PoolIndex (shared with the rules) ─┤   change leaves the node clean)
 *   setConfig(EncapConfig) ─────────────────────────┤
 *   in-sync ────────────────────────────────────────┘
 *                    │ dirty; once in sync, at flush:
 *                    ▼
 *   block routes (resolveBlockRoutes, once per family) ──► resolveVxlan(4), resolveVxlan(6),
 *   resolveIpip ──► tunnel sources (+ external nodes) ──► each emitted when it differs (Latest)
 *
 * Design: an update costs its own entry (one node, one block, parsed once); the states are derived
 * at most once per flush, only when something they read changed, and emitted only when they
 * differ from what was emitted. Nothing is emitted before in-sync nor before the first config.
 *
 * Thread-safety: single-threaded; pure (the host MTU comes in the config).
 */
import type { Node } from '@calico-ts/api';
import { ipFamily } from '@calico-ts/api/net';
import type { KindUpdate } from './dispatcher.js';
import { Latest } from './emitter.js';
import { hostAddresses, type IpipState, resolveIpip } from './ipip-resolver.js';
import type { PoolIndex } from './pool-index.js';
import { type BlockRecord, type BlockRoutes, blockRoutesOf, type EncapInput } from './route-resolver.js';
import type { EncapDiff, PoolEncaps, TunnelSources } from './types.js';
import { resolveVxlan, type VxlanState } from './vxlan-resolver.js';

/** The Felix parameters the tunnels are made from, and the host's MTU. */
export interface EncapConfig {
  /** VXLANEnabled; undefined: on when a pool uses VXLAN. */
  readonly vxlanEnabled?: boolean | undefined;
  /** VXLANVNI: the VXLAN network identifier of the tunnel devices. */
  readonly vxlanVni: number;
  /** VXLANPort: the UDP port the tunnels use. */
  readonly vxlanPort: number;
  /** VXLANMTU: the IPv4 tunnel device's MTU; 0 derives it from the host MTU. */
  readonly vxlanMtu: number;
  /** VXLANMTUV6: the IPv6 tunnel device's MTU; 0 derives it from the host MTU. */
  readonly vxlanMtuV6: number;
  /** IpInIpEnabled; undefined: on when a pool uses IPIP. */
  readonly ipipEnabled?: boolean | undefined;
  /** IpInIpMtu: the IPIP device's MTU; 0 derives it from the host MTU. */
  readonly ipipMtu: number;
  /** ProgramClusterRoutes is Enabled: Felix, not BIRD, programs the IPIP pools' routes. */
  readonly programClusterRoutes: boolean;
  /** Ipv6Support: the IPv6 VXLAN state is resolved too. */
  readonly ipv6Support: boolean;
  /** ExternalNodesCIDRList: hosts outside the cluster that may send tunnelled packets. */
  readonly externalNodes: readonly string[];
  /** NATOutgoingExclusions is IPPoolsAndHostIPs: NAT outgoing leaves the hosts alone. */
  readonly natExcludeHosts: boolean;
  /** The smallest MTU of the host's interfaces (MTUIfacePattern). */
  readonly hostMtu: number;
}

export class EncapResolver {
  readonly #hostname: string;
  readonly #pools: PoolIndex;
  readonly #nodes = new Map<string, Node>();
  /** Block key → its routing facts. */
  readonly #blocks = new Map<string, BlockRoutes>();
  #config: EncapConfig | undefined;
  #configJson = '';
  #inSync = false;
  #dirty = true;
  readonly #vxlan = new Latest<VxlanState>();
  readonly #vxlanV6 = new Latest<VxlanState>();
  readonly #ipip = new Latest<IpipState>();
  readonly #sources = new Latest<TunnelSources>({});
  readonly #poolEncaps = new Latest<PoolEncaps>();

  constructor(hostname: string, pools: PoolIndex) {
    this.#hostname = hostname;
    this.#pools = pools;
    pools.onChange(() => {
      this.#dirty = true;
    });
  }

  /** True when the next flush will derive the states again (something changed, and in sync). */
  get pending(): boolean {
    return this.#dirty && this.#inSync;
  }

  onNode(u: KindUpdate): void {
    const name = u.resource.metadata.name;
    if (u.kind === 'set') this.#nodes.set(name, u.resource as Node);
    else this.#nodes.delete(name);
    this.#dirty = true;
  }

  onBlock(u: KindUpdate): void {
    const key = u.resource.metadata.name;
    const record = u.kind === 'set' ? (u.resource as { spec?: BlockRecord }).spec : undefined;
    const routes = record ? blockRoutesOf(record) : undefined;
    const before = JSON.stringify(this.#blocks.get(key));
    if (routes) this.#blocks.set(key, routes);
    else this.#blocks.delete(key);
    if (JSON.stringify(routes) !== before) this.#dirty = true;
  }

  onInSync(): void {
    this.#inSync = true;
    this.#dirty = true;
  }

  setConfig(config: EncapConfig): void {
    const json = JSON.stringify(config);
    if (json === this.#configJson) return;
    this.#config = config;
    this.#configJson = json;
    this.#dirty = true;
  }

  /** The tunnel states that changed since the last flush (nothing before in-sync and a config). */
  flush(): EncapDiff {
    const cfg = this.#config;
    if (!this.#dirty || !this.#inSync || cfg === undefined) return {};
    this.#dirty = false;
    const nodes = [...this.#nodes.values()];
    const pools = this.#pools.resources;
    const input: EncapInput = { hostname: this.#hostname, nodes, pools, blocks: [...this.#blocks.values()] };
    const vxlan = resolveVxlan(input, {
      enabled: cfg.vxlanEnabled,
      vni: cfg.vxlanVni,
      port: cfg.vxlanPort,
      mtu: cfg.vxlanMtu,
      hostMtu: cfg.hostMtu,
    });
    const ipip = resolveIpip(input, {
      enabled: cfg.ipipEnabled,
      mtu: cfg.ipipMtu,
      hostMtu: cfg.hostMtu,
      programRoutes: cfg.programClusterRoutes,
    });
    // IPv6 over vxlan-v6.calico, when Felix does IPv6 at all (on when an IPv6 pool uses VXLAN).
    const vxlanV6 = cfg.ipv6Support
      ? resolveVxlan(
          input,
          {
            vni: cfg.vxlanVni,
            port: cfg.vxlanPort,
            mtu: cfg.vxlanMtu,
            mtuV6: cfg.vxlanMtuV6,
            hostMtu: cfg.hostMtu,
          },
          6,
        )
      : undefined;
    // The hosts tunnel packets may come from are part of the rules: a change re-renders them.
    const allHosts = [...hostAddresses(nodes), ...cfg.externalNodes];
    const externalOf = (family: 4 | 6) => cfg.externalNodes.filter((c) => ipFamily(c) === family);
    const sources: TunnelSources = {
      ...(ipip.enabled ? { ipipSources: allHosts } : {}),
      ...(cfg.natExcludeHosts ? { natExcludedHosts: allHosts } : {}),
      ...(vxlan.enabled ? { vxlanSources: [...vxlan.allowedSources, ...externalOf(4)] } : {}),
      ...(vxlanV6?.enabled ? { vxlanSourcesV6: [...vxlanV6.allowedSources, ...externalOf(6)] } : {}),
    };
    const used = (mode: string | undefined, disabled: boolean | undefined) =>
      mode !== undefined && mode !== 'Never' && disabled !== true;
    const poolEncaps: PoolEncaps = {
      vxlan: pools.some((p) => used(p.spec.vxlanMode, p.spec.disabled)),
      ipip: pools.some((p) => used(p.spec.ipipMode, p.spec.disabled)),
    };
    const out: {
      -readonly [K in keyof EncapDiff]: EncapDiff[K];
    } = {};
    const set = <K extends keyof EncapDiff>(k: K, v: EncapDiff[K] | undefined) => {
      if (v !== undefined) out[k] = v;
    };
    set('tunnelSources', this.#sources.offer(sources));
    set('ipip', this.#ipip.offer(ipip));
    if (vxlanV6 !== undefined) set('vxlanV6', this.#vxlanV6.offer(vxlanV6));
    set('vxlan', this.#vxlan.offer(vxlan));
    set('poolEncaps', this.#poolEncaps.offer(poolEncaps));
    return out;
  }

  /** The tunnel states last emitted (absent: not emitted yet). */
  state(): EncapDiff {
    const out: {
      -readonly [K in keyof EncapDiff]: EncapDiff[K];
    } = {};
    if (this.#vxlan.value) out.vxlan = this.#vxlan.value;
    if (this.#vxlanV6.value) out.vxlanV6 = this.#vxlanV6.value;
    if (this.#ipip.value) out.ipip = this.#ipip.value;
    if (this.#sources.value) out.tunnelSources = this.#sources.value;
    if (this.#poolEncaps.value) out.poolEncaps = this.#poolEncaps.value;
    return out;
  }
}
