/**
 * Calico's label selector language: `a == "x" && has(b) || c in {"y", "z"}`.
 * Parse once with `parseSelector`, then call `matches(labels)` as often as needed.
 */
export type { SelectorNode } from './ast.js';
export { printSelector } from './printer.js';
export {
  andSelectors,
  canonicalSelector,
  parseSelector,
  prefixSelectorLabels,
  type Selector,
  selectorMatches,
  validateSelector,
} from './selector.js';
