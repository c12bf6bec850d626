/**
 * What one v1 kind's converter returns (the v3 resource, how the v1 object was named, note lines)
 * and the note lines the converters share: a name that had to change, tags and labels rewritten in
 * rules. `../v1-to-v3.ts` prints them under the "converted ..." line of each resource.
 */
import type { Resource } from '../../resources/index.js';
import type { FieldPath, Obj } from '../fields.js';
import type { RuleNotes } from '../v1-rules.js';

export const API_V3 = 'projectcalico.org/v3' as const;

export interface Converted {
  resource: Resource;
  /** How the v1 object was identified, e.g. its CIDR or name. */
  from: string;
  notes: string[];
}

/** One v1 kind's conversion: the document (its keys already checked) at `at` → one v3 resource. */
export type KindConverter = (doc: Obj, at: FieldPath) => Converted;

export function renamedNote(what: string, from: string, to: string): string[] {
  return from === to
    ? []
    : [`  ${what} ${JSON.stringify(from)} is not a valid v3 name; renamed to ${JSON.stringify(to)}`];
}

export function ruleNotes(notes: RuleNotes): string[] {
  const out: string[] = [];
  if (notes.tags.size) {
    const tags = [...notes.tags].sort().map((t) => `${t} == ''`);
    out.push(
      `  tags became label selectors: ${tags.join(', ')} (the profiles that held those tags now apply them as labels)`,
    );
  }
  if (notes.k8sNamespaceLabel)
    out.push('  selector label calico/k8s_ns renamed to projectcalico.org/namespace');
  return out;
}
