/**
 * Kubernetes names, label keys and label values: the DNS-1123 and qualified-name rules, each
 * failing with a message written for a person. Pure and light (no schema library): the light entry
 * `@calico-ts/api/net` exports these with the CIDR helpers.
 */

const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
export const DNS_LABEL_RE = new RegExp(`^${LABEL}$`);
export const DNS_SUBDOMAIN_RE = new RegExp(`^${LABEL}(\\.${LABEL})*$`);

export function isDnsSubdomain(s: string): boolean {
  return s.length <= 253 && DNS_SUBDOMAIN_RE.test(s);
}
export function isDnsLabel(s: string): boolean {
  return s.length <= 63 && DNS_LABEL_RE.test(s);
}

export const SUBDOMAIN_RULE =
  "must be a lower-case DNS-1123 subdomain: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters";
export const LABEL_RULE =
  "must be a lower-case DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters";

// Kubernetes qualified names (label and annotation keys) and label values.
const QNAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/**
 * A set of strings already found valid, so that the same label keys, selectors... seen on every
 * write are checked once. Bounded: emptied when full.
 */
export function knownGood(limit: number): { has(s: string): boolean; add(s: string): void } {
  const seen = new Set<string>();
  return {
    has: (s) => seen.has(s),
    add: (s) => {
      if (seen.size >= limit) seen.clear();
      seen.add(s);
    },
  };
}

const GOOD_QUALIFIED_NAMES = knownGood(4096);

/** Why `key` is not a valid label/annotation key, or undefined if it is. */
export function qualifiedNameProblem(key: string): string | undefined {
  if (GOOD_QUALIFIED_NAMES.has(key)) return undefined;
  const problem = findQualifiedNameProblem(key);
  if (problem === undefined) GOOD_QUALIFIED_NAMES.add(key);
  return problem;
}

function findQualifiedNameProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (key.split('/').length > 2) return "must be a name with at most one '/' (prefix/name)";
  if (prefix !== undefined && !isDnsSubdomain(prefix)) return 'has an invalid prefix: it ' + SUBDOMAIN_RULE;
  if (name.length === 0) return 'must not have an empty name part';
  if (name.length > 63) return 'must have a name part of at most 63 characters';
  if (!QNAME_PART.test(name)) {
    return "must consist of letters, digits, '-', '_' or '.', starting and ending with a letter or digit";
  }
  return undefined;
}

export function labelValueProblem(value: string): string | undefined {
  if (value.length > 63) return 'must be at most 63 characters';
  if (value !== '' && !QNAME_PART.test(value)) {
    return "must be empty or consist of letters, digits, '-', '_' or '.', starting and ending with a letter or digit";
  }
  return undefined;
}
