/**
 * `policy explain`'s readable output, pure: the evaluator's trace in, text out. The verdict
 * first, then each direction as the dataplane walks it: tiers in order, each policy that applies
 * with the selector checks that made it apply and its rules up to the one that decided (each rule
 * with the criteria tested), the tier's end, the profiles; then the policies that do not select
 * the endpoint and why, and what the staged policies would change.
 */
import type {
  Check,
  DirectionTrace,
  EndpointSummary,
  Flow,
  PolicyTrace,
  ProfileTrace,
  RuleTrace,
  TierTrace,
  Verdict,
} from '@calico-ts/api/policy-eval';

export interface Explanation extends Verdict {
  readonly flow: Flow;
  /** How the user named each end. */
  readonly from: string;
  readonly to: string;
}

/** Policies that do not select the endpoint, listed in the text before the rest is counted. */
const NOT_SELECTING_SHOWN = 10;

const mark = (ok: boolean) => (ok ? '✓' : '✗');
const check = (c: Check) => `${c.what} ${mark(c.ok)} (${c.on})`;
const word = (allowed: boolean) => (allowed ? 'allow' : 'deny');

function labelsLine(labels: Readonly<Record<string, string>>): string {
  const keys = Object.keys(labels).sort();
  return keys.length === 0 ? '(none)' : keys.map((k) => `${k}=${labels[k]}`).join(', ');
}

function endLines(title: string, named: string, ep: EndpointSummary | undefined): string[] {
  if (!ep) return [`  ${title} ${named}: no endpoint (no policy of its own)`];
  const lines = [`  ${title} ${named}: ${ep.kind} ${ep.key}`, `        labels: ${labelsLine(ep.labels)}`];
  if (ep.serviceAccount) lines.push(`        service account: ${ep.serviceAccount}`);
  lines.push(`        profiles: ${ep.profiles.length > 0 ? ep.profiles.join(', ') : '(none)'}`);
  return lines;
}

function ruleLine(r: RuleTrace, direction: string): string {
  const head = `${direction}[${r.index}] ${r.action}`.padEnd(direction.length + 10);
  if (r.checks.length === 0) return `${head} ${r.matched ? 'match: matches every flow' : 'no match'}`;
  const checks = r.checks.map(check).join('; ');
  return `${head} ${r.matched ? 'match' : 'no match'}: ${checks}`;
}

function policyLines(p: PolicyTrace, direction: string, indent: string): string[] {
  const name = `${p.kind} ${p.namespace ? `${p.namespace}/` : ''}${p.name}`;
  const order = p.order !== undefined ? ` (order ${p.order})` : '';
  const staged = p.stagedAction ? ` [staged, ${p.stagedAction}]` : '';
  const lines = [`${indent}${name}${order}${staged}`];
  lines.push(`${indent}  applies: ${p.selection.map(check).join('; ')}`);
  if (p.rules.length === 0) lines.push(`${indent}  no ${direction} rules`);
  for (const r of p.rules) lines.push(`${indent}  ${ruleLine(r, direction)}`);
  return lines;
}

function tierLines(t: TierTrace, direction: string): string[] {
  const order = t.order !== undefined ? `order ${t.order}, ` : '';
  const lines = [`  tier ${t.name} (${order}defaultAction ${t.defaultAction})`];
  for (const p of t.policies) lines.push(...policyLines(p, direction, '    '));
  if (t.by === 'rule') {
    const p = t.policies.at(-1)!;
    lines.push(
      `    → ${t.result} by ${p.kind} ${p.namespace ? `${p.namespace}/` : ''}${p.name} ${direction}[${p.matchedRule}]`,
    );
  } else {
    lines.push(`    → ${t.result}: end of tier, no policy decided (defaultAction ${t.defaultAction})`);
  }
  return lines;
}

function profileLines(profiles: readonly ProfileTrace[], direction: string): string[] {
  if (profiles.length === 0) return [];
  const lines = ['  profiles'];
  for (const p of profiles) {
    if (!p.found) {
      lines.push(`    ${p.name}: does not exist`);
      continue;
    }
    lines.push(`    ${p.name}${p.rules.length === 0 ? `: no ${direction} rules` : ''}`);
    for (const r of p.rules) lines.push(`      ${ruleLine(r, direction)}`);
  }
  return lines;
}

function outcomeLines(
  d: { tiers: readonly TierTrace[]; profiles: readonly ProfileTrace[]; allowed: boolean; reason: string },
  direction: string,
  profilesReached: boolean,
): string[] {
  const lines: string[] = [];
  if (d.tiers.length === 0) lines.push('  no policy applies in this direction');
  for (const t of d.tiers) lines.push(...tierLines(t, direction));
  if (profilesReached) {
    lines.push(...profileLines(d.profiles, direction));
    if (d.profiles.length === 0) lines.push('  profiles: none, so denied');
  }
  lines.push(`  decided: ${word(d.allowed)} (${d.reason})`);
  return lines;
}

function directionLines(d: DirectionTrace, role: string): string[] {
  const lines = [``, `${d.direction} of ${d.endpoint} (${role})`];
  const profilesReached = d.decision.kind === 'profile' || d.decision.kind === 'no-profile';
  lines.push(...outcomeLines(d, d.direction, profilesReached));
  if (d.notSelecting.length > 0) {
    lines.push('  not selecting this endpoint:');
    for (const p of d.notSelecting.slice(0, NOT_SELECTING_SHOWN)) {
      const failed = p.selection.filter((c) => !c.ok).map(check);
      lines.push(`    ${p.kind} ${p.namespace ? `${p.namespace}/` : ''}${p.name}: ${failed.join('; ')}`);
    }
    const more = d.notSelecting.length - NOT_SELECTING_SHOWN;
    if (more > 0) lines.push(`    … and ${more} more (-o json lists them all)`);
  }
  if (d.staged) {
    const s = d.staged;
    const names = s.policies.map(
      (p) => `${p.kind} ${p.namespace ? `${p.namespace}/` : ''}${p.name} (${p.stagedAction})`,
    );
    lines.push(`  with the staged policies committed (${names.join(', ')}): ${word(s.allowed)}`);
    const reached = s.decision.kind === 'profile' || s.decision.kind === 'no-profile';
    lines.push(...outcomeLines(s, d.direction, reached).map((l) => `  ${l}`));
  }
  return lines;
}

function usesServices(x: Explanation): boolean {
  const dirs = [x.egress, x.ingress].filter((d): d is DirectionTrace => d !== undefined);
  return dirs.some((d) =>
    [...d.tiers, ...(d.staged?.tiers ?? [])].some((t) =>
      t.policies.some((p) => p.rules.some((r) => r.checks.some((c) => c.what.includes('.services ')))),
    ),
  );
}

export function renderExplanation(x: Explanation): string {
  const f = x.flow;
  const lines = [
    `${f.protocol} ${f.srcIP}:${f.srcPort} → ${f.dstIP}:${f.dstPort}`,
    ...endLines('from', x.from, x.source),
    ...endLines('to  ', x.to, x.destination),
    '',
    `verdict: ${x.allowed ? 'ALLOWED' : 'DENIED'}`,
  ];
  if (x.egress)
    lines.push(`  egress of ${x.egress.endpoint}: ${word(x.egress.allowed)} (${x.egress.reason})`);
  else lines.push('  egress: the source is no endpoint, nothing to apply');
  if (x.ingress)
    lines.push(`  ingress of ${x.ingress.endpoint}: ${word(x.ingress.allowed)} (${x.ingress.reason})`);
  else lines.push('  ingress: the destination is no endpoint, nothing to apply');
  if (x.egress?.staged || x.ingress?.staged) {
    lines.push(`  with the staged policies committed: ${x.stagedAllowed ? 'ALLOWED' : 'DENIED'}`);
  }
  if (x.egress) lines.push(...directionLines(x.egress, 'the source'));
  if (x.ingress) lines.push(...directionLines(x.ingress, 'the destination'));
  lines.push('');
  if (usesServices(x)) {
    lines.push('note: Kubernetes Services are not read here; a rule with `services` matched nothing.');
  }
  lines.push(
    'note: from the datastore alone: connection tracking (replies and established flows pass), failsafe',
    'ports, preDNAT and doNotTrack policies, network sets and what Felix has not yet programmed are not',
    'taken into account.',
  );
  return `${lines.join('\n')}\n`;
}
