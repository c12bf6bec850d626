/**
 * BGPFilter resources as BIRD functions, one per filter, direction and family, named as upstream
 * names them (`'bgp_<name>_importFilterV4'`, the name truncated and hashed past BIRD's 64-character
 * symbols). A peer session that lists a filter calls its functions first in its import and export
 * filters; a rule's `accept;` or `reject;` ends the filter there, as upstream relies on.
 *
 * Each rule is one statement: `if (<conditions joined by &&>) then { accept|reject; }`, or the bare
 * action when it has no condition. Conditions, as upstream writes them:
 * - `cidr` with `matchOperator` Equal/NotEqual/In/NotIn: `(net = c)`, `(net != c)`, `(net ~ c)`,
 *   `(net !~ c)`; with `prefixLength`, `c` is the prefix set `[ cidr{min,max} ]` (min defaults to
 *   the CIDR's length, max to the family's width);
 * - `source: RemotePeers`: `((defined(source))&&(source ~ [ RTS_BGP ]))`;
 * - `interface`: `((defined(ifname))&&(ifname ~ "<pattern>"))`.
 *
 * Criteria this renderer does not evaluate (`peerType`, `communities`, `asPathPrefix`, `priority`)
 * and route `operations` fail closed, with a warning: an Accept rule that carries one is left out
 * (it accepts nothing), a Reject rule is rendered without it (it rejects at least what it should).
 * Pure.
 */
import { createHash } from 'node:crypto';
import type { BGPFilter, BGPFilterRuleV4, BGPFilterRuleV6 } from '@calico-ts/api';
import { parseCidrOrIP } from '@calico-ts/api/net';
import type { IPFamily } from './bgp-input.js';

export type FilterDirection = 'import' | 'export';

/** One `function '<name>'() { … }` of the BIRD configuration. */
export interface BirdFilterFunction {
  /** The BGPFilter it comes from. */
  filter: string;
  direction: FilterDirection;
  /** The quoted BIRD symbol, e.g. `'bgp_my-filter_importFilterV4'`. */
  name: string;
  /** One statement per rule, in the rules' order. */
  statements: string[];
}

const MAX_BIRD_SYMBOL = 64;
const HASH_CHARS = 16;

/** `name` as is when it fits in `maxLen`, else its head, `_` and 16 hex digits of its SHA-256. */
function truncateAndHash(name: string, maxLen: number): string {
  if (name.length <= maxLen) return name;
  const hash = createHash('sha256').update(name).digest('hex').toUpperCase().slice(0, HASH_CHARS);
  return `${name.slice(0, maxLen - HASH_CHARS - 1)}_${hash}`;
}

/** The quoted BIRD symbol of a filter's function for one direction and family. */
export function filterFunctionName(filter: string, direction: FilterDirection, family: IPFamily): string {
  const fixed = `bgp__${direction}FilterV${family}`;
  return `'bgp_${truncateAndHash(filter, MAX_BIRD_SYMBOL - fixed.length)}_${direction}FilterV${family}'`;
}

const OPERATORS: Record<string, string> = { Equal: '=', NotEqual: '!=', In: '~', NotIn: '!~' };

type Rule = BGPFilterRuleV4 | BGPFilterRuleV6;

function cidrCondition(r: Rule, family: IPFamily): string | undefined {
  if (r.cidr === undefined) return undefined;
  const op = OPERATORS[r.matchOperator ?? ''];
  if (op === undefined) return undefined; // validation requires matchOperator with cidr
  let set = r.cidr;
  if (r.prefixLength !== undefined) {
    const own = parseCidrOrIP(r.cidr)?.prefix ?? 0;
    const min = Math.max(own, r.prefixLength.min ?? own);
    const max = Math.min(family === 4 ? 32 : 128, r.prefixLength.max ?? (family === 4 ? 32 : 128));
    set = `[ ${r.cidr}{${min},${max}} ]`;
  }
  return `(net ${op} ${set})`;
}

/** What of `r` this renderer cannot evaluate or apply, by field name. */
function unsupported(r: Rule): string[] {
  const out: string[] = [];
  if (r.peerType !== undefined) out.push('peerType');
  if (r.communities !== undefined) out.push('communities');
  if (r.asPathPrefix !== undefined) out.push('asPathPrefix');
  if (r.priority !== undefined) out.push('priority');
  if (r.operations !== undefined && r.operations.length > 0) out.push('operations');
  return out;
}

function statement(r: Rule, family: IPFamily): string {
  const conditions = [
    cidrCondition(r, family),
    r.source === 'RemotePeers' ? '((defined(source))&&(source ~ [ RTS_BGP ]))' : undefined,
    r.interface !== undefined ? `((defined(ifname))&&(ifname ~ "${r.interface}"))` : undefined,
  ].filter((c): c is string => c !== undefined);
  const action = `${r.action.toLowerCase()};`;
  return conditions.length === 0 ? action : `if (${conditions.join('&&')}) then { ${action} }`;
}

/**
 * The functions of every BGPFilter for `family`, sorted by filter name; `warnings` gets one line
 * per rule that could not be rendered as written.
 */
export function deriveFilterFunctions(
  filters: readonly BGPFilter[],
  family: IPFamily,
  warnings: string[],
): BirdFilterFunction[] {
  const out: BirdFilterFunction[] = [];
  const sorted = [...filters].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  for (const f of sorted) {
    for (const direction of ['import', 'export'] as const) {
      const field = `${direction}V${family}` as const;
      const rules = (f.spec[field] ?? []) as Rule[];
      if (rules.length === 0) continue;
      const statements: string[] = [];
      rules.forEach((r, i) => {
        const skipped = unsupported(r);
        if (skipped.length > 0) {
          const where = `BGPFilter ${f.metadata.name}: spec.${field}[${i}]`;
          if (r.action === 'Accept') {
            warnings.push(`${where}: ${skipped.join(', ')} not supported; the Accept rule is left out`);
            return;
          }
          warnings.push(`${where}: ${skipped.join(', ')} not supported; the Reject rule applies without it`);
        }
        statements.push(statement(r, family));
      });
      out.push({
        filter: f.metadata.name,
        direction,
        name: filterFunctionName(f.metadata.name, direction, family),
        statements,
      });
    }
  }
  return out;
}
