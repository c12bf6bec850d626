/**
 * `@calico-ts/api/net`: IP address and CIDR arithmetic and the Kubernetes name and label rules,
 * without the resource schemas. Importing it loads these two small modules and nothing else, for
 * programs where start-up time matters (the CNI plugin runs once per pod).
 */
export {
  type Cidr,
  cidrContains,
  cidrSize,
  cidrsOverlap,
  familyBits,
  formatCidr,
  formatIP,
  type IPAddress,
  type IPFamily,
  ipFamily,
  isStrictlyMasked,
  parseCidr,
  parseCidrOrIP,
  parseIP,
  prefixMask,
} from './cidr.js';
export {
  isDnsLabel,
  isDnsSubdomain,
  LABEL_RULE,
  labelValueProblem,
  qualifiedNameProblem,
  SUBDOMAIN_RULE,
} from './labels.js';
