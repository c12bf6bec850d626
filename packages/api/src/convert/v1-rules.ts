/**
 * v1 policy/profile rules → v3 rules, as upstream's upgrade converters do it
 * (`libcalico-go/lib/upgrade/converters/rule.go`):
 * - actions `allow|deny|log|pass|next-tier` (any case) → `Allow|Deny|Log|Pass`;
 * - protocol names → their v3 spelling (`tcp` → `TCP`, `icmpv6` → `ICMPv6`), numbers kept;
 * - `net` is appended after `nets` (likewise `notNet`/`notNets`), every CIDR masked to its network;
 * - `calico/k8s_ns` in selectors → `projectcalico.org/namespace`;
 * - a `tag` becomes `<tag> == ''`, ANDed onto the selector as `(<selector>) && <tag> == ''`
 *   (`notTag` likewise onto `notSelector`).
 */

import { formatCidr, parseCidrOrIP } from '../net/cidr.js';
import type { EntityRule, Rule } from '../resources/index.js';
import { type FieldPath, type Obj, optList, optNumber, optString, readObj } from './fields.js';

const V1_RULE_FIELDS = [
  'action',
  'ipVersion',
  'protocol',
  'icmp',
  'notProtocol',
  'notICMP',
  'source',
  'destination',
] as const;
const V1_ENTITY_FIELDS = [
  'tag',
  'net',
  'nets',
  'selector',
  'ports',
  'notTag',
  'notNet',
  'notNets',
  'notSelector',
  'notPorts',
] as const;

const ACTIONS: Record<string, Rule['action']> = {
  allow: 'Allow',
  deny: 'Deny',
  log: 'Log',
  pass: 'Pass',
  'next-tier': 'Pass',
};

const PROTOCOLS: Record<string, string> = {
  tcp: 'TCP',
  udp: 'UDP',
  icmp: 'ICMP',
  icmpv6: 'ICMPv6',
  sctp: 'SCTP',
  udplite: 'UDPLite',
};

/** What a conversion noticed that a user may want to know (tags rewritten, selectors renamed). */
export interface RuleNotes {
  tags: Set<string>;
  k8sNamespaceLabel: boolean;
}

export function newRuleNotes(): RuleNotes {
  return { tags: new Set(), k8sNamespaceLabel: false };
}

/** `calico/k8s_ns` was the v1 namespace label; v3 calls it `projectcalico.org/namespace`. */
export function convertV1Selector(sel: string, notes?: RuleNotes): string {
  if (notes && sel.includes('calico/k8s_ns')) notes.k8sNamespaceLabel = true;
  return sel.replaceAll('calico/k8s_ns', 'projectcalico.org/namespace');
}

function mergeTag(sel: string, tag: string | undefined): string {
  if (!tag) return sel;
  return sel ? `(${sel}) && ${tag} == ''` : `${tag} == ''`;
}

export function convertV1Protocol(v: unknown, at: FieldPath): string | number {
  if (typeof v === 'number') {
    if (!Number.isInteger(v) || v < 1 || v > 255) throw at.error(`protocol number must be 1-255, got ${v}`);
    return v;
  }
  if (typeof v === 'string') {
    if (/^[0-9]+$/.test(v)) return convertV1Protocol(Number(v), at);
    const p = PROTOCOLS[v.toLowerCase()];
    if (!p)
      throw at.error(
        `unknown protocol ${JSON.stringify(v)} (expected tcp, udp, icmp, icmpv6, sctp, udplite or 1-255)`,
      );
    return p;
  }
  throw at.error(`must be a protocol name or number, got ${JSON.stringify(v)}`);
}

const PORT_NAME = /^[a-zA-Z0-9_.-]{1,128}$/;

/** A port as `numorstring.Port` reads it: a number, `"min:max"`, or a port name. */
export function convertPort(v: unknown, at: FieldPath): number | string {
  const num = (n: number): number => {
    if (!Number.isInteger(n) || n < 0 || n > 65535) throw at.error(`port number must be 0-65535, got ${n}`);
    return n;
  };
  if (typeof v === 'number') return num(v);
  if (typeof v !== 'string') throw at.error(`must be a port number, range or name, got ${JSON.stringify(v)}`);
  if (/^[0-9]+$/.test(v)) return num(Number(v));
  const range = /^([0-9]+):([0-9]+)$/.exec(v);
  if (range) {
    const min = num(Number(range[1]));
    const max = num(Number(range[2]));
    if (min > max) throw at.error(`port range ${v}: minimum ${min} is greater than maximum ${max}`);
    return min === max ? min : `${min}:${max}`;
  }
  if (!PORT_NAME.test(v)) throw at.error(`invalid port ${JSON.stringify(v)}`);
  return v;
}

function convertPorts(o: Obj, key: string, at: FieldPath): (number | string)[] | undefined {
  const list = optList(o, key, at);
  if (!list || list.length === 0) return undefined;
  return list.map((p, i) => convertPort(p, at.child(key).child(i)));
}

function convertNet(v: unknown, at: FieldPath): string {
  if (typeof v !== 'string') throw at.error(`must be a CIDR string, got ${JSON.stringify(v)}`);
  const c = parseCidrOrIP(v);
  if (!c) throw at.error(`${JSON.stringify(v)} is not a CIDR`);
  return formatCidr(c);
}

/** `nets` in order, then `net` (upstream's `AllSrcNets`), each masked to its network. */
function combineNets(o: Obj, netKey: string, netsKey: string, at: FieldPath): string[] | undefined {
  const out: string[] = [];
  const nets = optList(o, netsKey, at) ?? [];
  nets.forEach((n, i) => {
    out.push(convertNet(n, at.child(netsKey).child(i)));
  });
  if (o[netKey] !== undefined && o[netKey] !== null) out.push(convertNet(o[netKey], at.child(netKey)));
  return out.length ? out : undefined;
}

function convertEntity(v: unknown, at: FieldPath, notes: RuleNotes): EntityRule {
  const o = readObj(v, at, V1_ENTITY_FIELDS);
  const tag = optString(o, 'tag', at);
  const notTag = optString(o, 'notTag', at);
  if (tag) notes.tags.add(tag);
  if (notTag) notes.tags.add(notTag);
  const selector = mergeTag(convertV1Selector(optString(o, 'selector', at) ?? '', notes), tag);
  const notSelector = mergeTag(convertV1Selector(optString(o, 'notSelector', at) ?? '', notes), notTag);
  const out: EntityRule = {};
  const nets = combineNets(o, 'net', 'nets', at);
  if (nets) out.nets = nets;
  if (selector) out.selector = selector;
  const ports = convertPorts(o, 'ports', at);
  if (ports) out.ports = ports;
  const notNets = combineNets(o, 'notNet', 'notNets', at);
  if (notNets) out.notNets = notNets;
  if (notSelector) out.notSelector = notSelector;
  const notPorts = convertPorts(o, 'notPorts', at);
  if (notPorts) out.notPorts = notPorts;
  return out;
}

function convertICMP(v: unknown, at: FieldPath): { type?: number; code?: number } | undefined {
  const o = readObj(v, at, ['type', 'code']);
  const type = optNumber(o, 'type', at);
  const code = optNumber(o, 'code', at);
  if (type === undefined && code === undefined) return undefined;
  const out: { type?: number; code?: number } = {};
  if (type !== undefined) out.type = type;
  if (code !== undefined) out.code = code;
  return out;
}

export function convertV1Rule(v: unknown, at: FieldPath, notes: RuleNotes): Rule {
  const o = readObj(v, at, V1_RULE_FIELDS, false);
  const actionText = optString(o, 'action', at);
  if (!actionText) throw at.child('action').error('is required (allow, deny, log, pass or next-tier)');
  const action = ACTIONS[actionText.toLowerCase()];
  if (!action) {
    throw at
      .child('action')
      .error(`unknown action ${JSON.stringify(actionText)} (expected allow, deny, log, pass or next-tier)`);
  }
  const rule: Rule = { action };
  const ipVersion = optNumber(o, 'ipVersion', at);
  if (ipVersion !== undefined) {
    if (ipVersion !== 4 && ipVersion !== 6)
      throw at.child('ipVersion').error(`must be 4 or 6, got ${ipVersion}`);
    rule.ipVersion = ipVersion;
  }
  if (o.protocol !== undefined && o.protocol !== null) {
    rule.protocol = convertV1Protocol(o.protocol, at.child('protocol')) as Rule['protocol'];
  }
  const icmp = convertICMP(o.icmp, at.child('icmp'));
  if (icmp) rule.icmp = icmp;
  if (o.notProtocol !== undefined && o.notProtocol !== null) {
    rule.notProtocol = convertV1Protocol(o.notProtocol, at.child('notProtocol')) as Rule['notProtocol'];
  }
  const notICMP = convertICMP(o.notICMP, at.child('notICMP'));
  if (notICMP) rule.notICMP = notICMP;
  rule.source = convertEntity(o.source, at.child('source'), notes);
  rule.destination = convertEntity(o.destination, at.child('destination'), notes);
  return rule;
}

export function convertV1Rules(o: Obj, key: string, at: FieldPath, notes: RuleNotes): Rule[] | undefined {
  const list = optList(o, key, at);
  if (!list || list.length === 0) return undefined;
  return list.map((r, i) => convertV1Rule(r, at.child(key).child(i), notes));
}
