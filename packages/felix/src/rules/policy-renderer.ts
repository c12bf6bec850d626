/**
 * Policy and profile rules → nftables rules (upstream `felix/rules/policy.go`).
 *
 * Each `NormalizedRule` becomes one rule per family (none if its ipVersion or nets rule the family
 * out, and none for an Allow, Pass or Log rule with a field we do not enforce: it fails closed): the match, then the action — Allow sets the accept mark and returns, Pass sets the pass
 * mark and returns, Deny drops, Log logs and falls through. Several nets are one anonymous set;
 * numeric ports and named ports of one side are OR-ed, which one rule cannot express, so when a
 * side has both (or several named ports) the rule is preceded by a block of rules that sets
 * scratch mark bits, as upstream's match blocks do.
 */
import { cidrContains, parseCidrOrIP } from '@calico-ts/api/net';
import {
  anonSet,
  cidr as cidrExpr,
  clearMarkBits,
  concat,
  drop,
  eq,
  log,
  markBitsClear,
  markBitsSet,
  match,
  meta,
  type NftExpr,
  type NftStatement,
  ne,
  oneOrSet,
  payload,
  range,
  returnVerdict,
  setMarkBits,
} from '@calico-ts/nftables';
import type { NormalizedRule, PortRange } from '../calc/types.js';
import type { MarkBits } from './config.js';
import { type IpFamily, ipSetName } from './names.js';
import { l4protoExpr, portProtocol } from './protocols.js';

export interface RenderedRule {
  readonly expr: readonly NftStatement[];
  readonly comment?: string;
}

export interface PolicyRenderContext {
  readonly family: IpFamily;
  readonly marks: MarkBits;
  readonly logPrefix: string;
}

function familyOf(cidr: string): IpFamily {
  return cidr.includes(':') ? 'ip6' : 'ip';
}

/**
 * The CIDRs of `family`; `undefined` when the list had CIDRs but none of this family (the rule
 * then does not apply to the family). A negated catch-all also rules the rule out.
 */
function filterNets(nets: readonly string[], family: IpFamily, negated: boolean): string[] | undefined {
  if (nets.length === 0) return [];
  const out = nets.filter((n) => familyOf(n) === family);
  if (out.length === 0) return undefined;
  if (negated && out.some((n) => n === '0.0.0.0/0' || n === '::/0')) return undefined;
  return out;
}

/** Drops CIDRs contained in another of the list: nft sets reject overlapping intervals. */
export function withoutContained(cidrs: readonly string[]): string[] {
  const uniq = [...new Set(cidrs)];
  const parsed = uniq.map((c) => ({ text: c, cidr: parseCidrOrIP(c)! }));
  return parsed
    .filter(
      (a) => !parsed.some((b) => b !== a && b.cidr.prefix < a.cidr.prefix && cidrContains(b.cidr, a.cidr)),
    )
    .map((a) => a.text);
}

function portValues(ports: readonly PortRange[]): NftExpr[] {
  return ports.map((p) => (p.first === p.last ? p.first : range(p.first, p.last)));
}

type Side = 'src' | 'dst';

class RuleBuilder {
  private readonly pre: RenderedRule[] = [];
  private usingBlocks = false;
  private doneFirstBlock = false;

  constructor(
    private readonly ctx: PolicyRenderContext,
    private readonly rule: NormalizedRule,
  ) {}

  private addr(side: Side): NftExpr {
    return payload(this.ctx.family, side === 'src' ? 'saddr' : 'daddr');
  }

  private setRef(id: string): string {
    return `@${ipSetName(this.ctx.family, id)}`;
  }

  protocolMatch(): NftStatement[] {
    return this.rule.protocol === undefined ? [] : [eq(meta('l4proto'), l4protoExpr(this.rule.protocol))];
  }

  portMatch(side: Side, ports: readonly PortRange[], negated: boolean): NftStatement {
    const field = side === 'src' ? 'sport' : 'dport';
    return match(
      payload(portProtocol(this.rule.protocol), field),
      negated ? '!=' : '==',
      oneOrSet(portValues(ports)),
    );
  }

  /** `addr . l4proto . port` in a set of such triples: named ports and destination services. */
  namedPortMatch(side: Side, id: string, negated: boolean): NftStatement {
    const port = payload('th', side === 'src' ? 'sport' : 'dport');
    return match(concat(this.addr(side), meta('l4proto'), port), negated ? '!=' : '==', this.setRef(id));
  }

  netMatch(side: Side, nets: readonly string[], negated: boolean): NftStatement {
    return match(this.addr(side), negated ? '!=' : '==', oneOrSet(withoutContained(nets).map(cidrExpr)));
  }

  setMatch(side: Side, id: string, negated: boolean): NftStatement {
    return match(this.addr(side), negated ? '!=' : '==', this.setRef(id));
  }

  icmpMatch(icmp: { type: number; code?: number }, negated: boolean): NftStatement[] {
    const proto = this.ctx.family === 'ip' ? 'icmp' : 'icmpv6';
    if (!negated) {
      const out = [eq(payload(proto, 'type'), icmp.type)];
      if (icmp.code !== undefined) out.push(eq(payload(proto, 'code'), icmp.code));
      return out;
    }
    if (icmp.code === undefined) return [ne(payload(proto, 'type'), icmp.type)];
    return [
      ne(concat(payload(proto, 'type'), payload(proto, 'code')), anonSet([concat(icmp.type, icmp.code)])),
    ];
  }

  /** A block OR-ing a side's numeric ports with its named ports, leaving the result in scratch0. */
  portBlock(side: Side, ports: readonly PortRange[], namedIds: readonly string[]): void {
    const { scratch0, scratch1 } = this.ctx.marks;
    if (!this.usingBlocks) {
      this.pre.push({ expr: [clearMarkBits(scratch0 | scratch1)] });
      this.usingBlocks = true;
    }
    const bit = this.doneFirstBlock ? scratch1 : scratch0;
    if (ports.length > 0) {
      this.pre.push({
        expr: [...this.protocolMatch(), this.portMatch(side, ports, false), setMarkBits(bit)],
      });
    }
    for (const id of namedIds)
      this.pre.push({ expr: [this.namedPortMatch(side, id, false), setMarkBits(bit)] });
    if (this.doneFirstBlock) {
      // scratch0 &&= scratch1
      this.pre.push({ expr: [markBitsClear(scratch1), clearMarkBits(scratch0)] });
    }
    this.doneFirstBlock = true;
  }

  build(): RenderedRule[] {
    const r = this.rule;
    const fam = this.ctx.family;
    // Fail closed: a rule that would grant (or log) on a criterion we do not enforce matches
    // nothing. A Deny rule keeps its other criteria, so it denies more, never less.
    if (r.unenforced && r.unenforced.length > 0 && r.action !== 'deny') return [];
    if (r.ipVersion !== undefined && (r.ipVersion === 4) !== (fam === 'ip')) return [];
    // An ICMP rule can only match its own family's ICMP.
    const v4icmp = r.protocol === 'icmp' || r.protocol === 1;
    const v6icmp = r.protocol === 'icmpv6' || r.protocol === 58;
    if ((fam === 'ip6' && v4icmp) || (fam === 'ip' && v6icmp)) return [];
    const srcNets = filterNets(r.srcNets, fam, false);
    const dstNets = filterNets(r.dstNets, fam, false);
    const notSrcNets = filterNets(r.notSrcNets, fam, true);
    const notDstNets = filterNets(r.notDstNets, fam, true);
    if (!srcNets || !dstNets || !notSrcNets || !notDstNets) return [];

    let srcPorts = r.srcPorts;
    let srcNamed = r.srcNamedPortIPSetIds;
    if ((srcPorts.length > 0 ? 1 : 0) + srcNamed.length > 1) {
      this.portBlock('src', srcPorts, srcNamed);
      srcPorts = [];
      srcNamed = [];
    }
    let dstPorts = r.dstPorts;
    let dstNamed = r.dstNamedPortIPSetIds;
    if ((dstPorts.length > 0 ? 1 : 0) + dstNamed.length > 1) {
      this.portBlock('dst', dstPorts, dstNamed);
      dstPorts = [];
      dstNamed = [];
    }

    const m: NftStatement[] = [...this.protocolMatch()];
    if (srcNets.length > 0) m.push(this.netMatch('src', srcNets, false));
    for (const id of r.srcIPSetIds) m.push(this.setMatch('src', id, false));
    if (srcPorts.length > 0) m.push(this.portMatch('src', srcPorts, false));
    for (const id of srcNamed) m.push(this.namedPortMatch('src', id, false));
    if (dstNets.length > 0) m.push(this.netMatch('dst', dstNets, false));
    for (const id of r.dstIPSetIds) m.push(this.setMatch('dst', id, false));
    if (dstPorts.length > 0) m.push(this.portMatch('dst', dstPorts, false));
    for (const id of dstNamed) m.push(this.namedPortMatch('dst', id, false));
    for (const id of r.dstIPPortSetIds) m.push(this.namedPortMatch('dst', id, false));
    if (r.icmp) m.push(...this.icmpMatch(r.icmp, false));

    if (r.notProtocol !== undefined) m.push(ne(meta('l4proto'), l4protoExpr(r.notProtocol)));
    if (notSrcNets.length > 0) m.push(this.netMatch('src', notSrcNets, true));
    for (const id of r.notSrcIPSetIds) m.push(this.setMatch('src', id, true));
    if (r.notSrcPorts.length > 0) m.push(this.portMatch('src', r.notSrcPorts, true));
    for (const id of r.notSrcNamedPortIPSetIds) m.push(this.namedPortMatch('src', id, true));
    if (notDstNets.length > 0) m.push(this.netMatch('dst', notDstNets, true));
    for (const id of r.notDstIPSetIds) m.push(this.setMatch('dst', id, true));
    if (r.notDstPorts.length > 0) m.push(this.portMatch('dst', r.notDstPorts, true));
    for (const id of r.notDstNamedPortIPSetIds) m.push(this.namedPortMatch('dst', id, true));
    if (r.notICMP) m.push(...this.icmpMatch(r.notICMP, true));

    if (this.usingBlocks) m.push(markBitsSet(this.ctx.marks.scratch0));

    const { marks } = this.ctx;
    let main: NftStatement[];
    switch (r.action) {
      case 'allow':
        main = [...m, setMarkBits(marks.accept), returnVerdict()];
        break;
      case 'pass':
        main = [...m, setMarkBits(marks.pass), returnVerdict()];
        break;
      case 'deny':
        main = [...m, drop()];
        break;
      case 'log':
        main = [...m, log({ prefix: `${this.ctx.logPrefix}: ` })];
        break;
    }
    return [...this.pre, { expr: main }];
  }
}

/** The nftables rules of one policy/profile direction, for one family. */
export function renderPolicyRules(
  rules: readonly NormalizedRule[],
  ctx: PolicyRenderContext,
): RenderedRule[] {
  const out: RenderedRule[] = [];
  for (const r of rules) out.push(...new RuleBuilder(ctx, r).build());
  return out;
}
