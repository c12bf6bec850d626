/**
 * The warning for rule fields this dataplane does not enforce (HTTP matches, an unknown key): the
 * graph fails such a rule closed; this logs it once per policy or profile and distinct rule set.
 *
 *   DataplaneDiff (policies, profiles updated / removed) ──► log(diff) ──► one warning per change
 *
 * Thread-safety: one event loop.
 */
import type { DataplaneDiff, NormalizedRule } from '../calc/types.js';
import type { Logger } from '../logging.js';

export class UnenforcedFieldsLog {
  readonly #log: Logger;
  /** Owner ID → the unenforced-field warning last logged for it. */
  readonly #logged = new Map<string, string>();

  constructor(log: Logger) {
    this.#log = log;
  }

  /** Logs each active policy's or profile's unenforced fields once per distinct rule set. */
  log(diff: DataplaneDiff): void {
    const fields = (dir: string, rules: readonly NormalizedRule[]) =>
      rules.flatMap((r, i) =>
        (r.unenforced ?? []).map(
          (f) =>
            `${dir}[${i}].${f} (${r.action === 'deny' ? 'Deny rule applies its other criteria' : `${r.action} rule matches nothing`})`,
        ),
      );
    const owners = [
      ...diff.policiesUpdated.map((p) => ({ kind: 'policy', id: p.id, in: p.inbound, out: p.outbound })),
      ...diff.profilesUpdated.map((p) => ({ kind: 'profile', id: p.id, in: p.inbound, out: p.outbound })),
    ];
    for (const o of owners) {
      const list = [...fields('ingress', o.in), ...fields('egress', o.out)];
      const key = `${o.kind}:${o.id}`;
      const text = list.join('; ');
      if (text === (this.#logged.get(key) ?? '')) continue;
      if (list.length === 0) {
        this.#logged.delete(key);
        continue;
      }
      this.#logged.set(key, text);
      this.#log.warn(
        { [o.kind]: o.id, unenforced: list },
        'rule fields this dataplane does not enforce: they fail closed',
      );
    }
    for (const id of diff.policiesRemoved) this.#logged.delete(`policy:${id}`);
    for (const id of diff.profilesRemoved) this.#logged.delete(`profile:${id}`);
  }
}
