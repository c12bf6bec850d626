/**
 * What every step of `deriveBirdModel` reads: the input, the family, the default and this node's
 * BGPConfiguration, the nodes as `NodeFacts`, this node's address, AS and cluster id, listen ports,
 * selector matching and secret lookup, and the one `warnings` list they all append to. Built once
 * per family; pure (selector parses are cached, each bad selector warned about once).
 *
 *   bgpConfigs ──► global (default), mine (node.<name>), listen ports
 *   nodes ──► NodeFacts (sorted by name) ──► me: IP, AS (or the global AS), RR cluster id
 */
import { type BGPConfigurationSpec, parseSelector } from '@calico-ts/api';
import type { BgpInput, IPFamily } from '../bgp-input.js';
import { asNumberValue, cmp, DEFAULT_AS_NUMBER, type NodeFacts, nodeFacts } from './node-facts.js';
import type { BirdPeer } from './types.js';

export interface ModelContext {
  readonly input: BgpInput;
  readonly family: IPFamily;
  /** Appended to by every step, in the order the steps run. */
  readonly warnings: string[];
  /** BGPConfiguration `default`'s spec, or `{}`. */
  readonly global: BGPConfigurationSpec;
  /** BGPConfiguration `node.<this node>`'s spec, or `{}`. */
  readonly mine: BGPConfigurationSpec;
  readonly globalAs: number;
  /** Every node's facts for the family, sorted by name. */
  readonly nodes: readonly NodeFacts[];
  readonly me?: NodeFacts;
  readonly myIP?: string;
  readonly myAs: number;
  readonly myCluster?: string;
  /** The `node.<name>` BGPConfiguration's listen port. */
  nodeSpecificPort(name: string): number | undefined;
  /** A node's BGP listen port: its own BGPConfiguration's, else the default's. */
  listenPortOf(name: string): number | undefined;
  /** The nodes a selector picks; a selector that does not parse picks none (and warns once). */
  matching(selector: string, owner: string): NodeFacts[];
  /**
   * The password a session references: its value, or why it cannot be had. A session whose
   * password is missing is kept down, never brought up without one (upstream renders it without).
   */
  secret(
    ref: { name?: string; key?: string } | undefined,
    owner: string,
  ): Pick<BirdPeer, 'password' | 'passwordMissing'>;
}

export function modelContext(input: BgpInput, family: IPFamily, warnings: string[]): ModelContext {
  const byName = new Map(input.bgpConfigs.map((c) => [c.metadata.name, c]));
  const global: BGPConfigurationSpec = byName.get('default')?.spec ?? {};
  const mine: BGPConfigurationSpec = byName.get(`node.${input.nodeName}`)?.spec ?? {};
  const nodeSpecificPort = (name: string) => byName.get(`node.${name}`)?.spec.listenPort;
  const globalAs = asNumberValue(global.asNumber) ?? DEFAULT_AS_NUMBER;
  const nodes = [...input.nodes]
    .sort((a, b) => cmp(a.metadata.name, b.metadata.name))
    .map((n) => nodeFacts(n, family));
  const me = nodes.find((n) => n.name === input.nodeName);
  return {
    input,
    family,
    warnings,
    global,
    mine,
    globalAs,
    nodes,
    me,
    myIP: me?.ip,
    myAs: me?.asNumber ?? globalAs,
    myCluster: me?.rrClusterId,
    nodeSpecificPort,
    listenPortOf: (name) => nodeSpecificPort(name) ?? global.listenPort,
    matching: selectorMatcher(nodes, warnings),
    secret: (ref, owner) => secretOf(input, warnings, ref, owner),
  };
}

function selectorMatcher(nodes: readonly NodeFacts[], warnings: string[]): ModelContext['matching'] {
  const cache = new Map<string, ((l: Record<string, string>) => boolean) | undefined>();
  return (text, owner) => {
    if (!cache.has(text)) {
      try {
        const s = parseSelector(text);
        cache.set(text, (l) => s.matches(l));
      } catch (e) {
        warnings.push(`BGPPeer ${owner}: selector ${JSON.stringify(text)} skipped: ${(e as Error).message}`);
        cache.set(text, undefined);
      }
    }
    const m = cache.get(text);
    return m ? nodes.filter((n) => m(n.labels)) : [];
  };
}

function secretOf(
  input: BgpInput,
  warnings: string[],
  ref: { name?: string; key?: string } | undefined,
  owner: string,
): Pick<BirdPeer, 'password' | 'passwordMissing'> {
  if (!ref?.name || !ref.key) return {};
  const v = input.secrets?.[`${ref.name}/${ref.key}`];
  let why: string | undefined;
  if (v === undefined) why = 'not available';
  // BIRD strings have no escapes: a double quote or line break cannot be written.
  else if (/["\n\r\0]/.test(v)) why = 'holds a quote or line break';
  if (why === undefined) return { password: v };
  const missing = `secret ${ref.name}/${ref.key} ${why}`;
  warnings.push(`${owner}: password ${missing}; its BGP sessions are kept down until it is usable`);
  return { passwordMissing: missing };
}
