/**
 * Compiles a SelectorNode into a closure over a label map. Done once per selector; evaluation is
 * then plain property reads and comparisons, no regexes and no tree walk by `kind`.
 *
 * A label is present only when the map holds a string under that name, so inherited members of
 * `Object.prototype` (`constructor`, `__proto__`, `toString`) never count as labels.
 */
import type { SelectorNode } from './ast.js';

export type Labels = Readonly<Record<string, string>>;
export type LabelMatcher = (labels: Labels) => boolean;

/** Up to this many set values a linear scan beats hashing. */
const SMALL_SET = 8;

const always: LabelMatcher = () => true;
const never: LabelMatcher = () => false;

export function compileSelector(node: SelectorNode): LabelMatcher {
  switch (node.kind) {
    case 'all':
    case 'global':
      return always;
    case 'has': {
      const label = node.label;
      return (labels) => typeof labels[label] === 'string';
    }
    case 'eq': {
      const { label, value } = node;
      // Only own string values can equal a string, so no presence check is needed.
      return (labels) => labels[label] === value;
    }
    case 'neq': {
      const { label, value } = node;
      return (labels) => labels[label] !== value;
    }
    case 'contains': {
      const { label, value } = node;
      return (labels) => {
        const v = labels[label];
        return typeof v === 'string' && v.includes(value);
      };
    }
    case 'startsWith': {
      const { label, value } = node;
      return (labels) => {
        const v = labels[label];
        return typeof v === 'string' && v.startsWith(value);
      };
    }
    case 'endsWith': {
      const { label, value } = node;
      return (labels) => {
        const v = labels[label];
        return typeof v === 'string' && v.endsWith(value);
      };
    }
    case 'in':
      return compileIn(node.label, node.values);
    case 'notIn': {
      const inSet = compileIn(node.label, node.values);
      return (labels) => !inSet(labels);
    }
    case 'not': {
      const operand = compileSelector(node.operand);
      return (labels) => !operand(labels);
    }
    case 'and':
      return compileAnd(node.operands.map(compileSelector));
    case 'or':
      return compileOr(node.operands.map(compileSelector));
  }
}

function compileIn(label: string, values: readonly string[]): LabelMatcher {
  if (values.length === 0) return never;
  if (values.length === 1) {
    const only = values[0];
    return (labels) => labels[label] === only;
  }
  if (values.length <= SMALL_SET) {
    const list = values.slice();
    return (labels) => {
      const v = labels[label];
      return typeof v === 'string' && list.includes(v);
    };
  }
  const set = new Set(values);
  return (labels) => {
    const v = labels[label];
    return typeof v === 'string' && set.has(v);
  };
}

function compileAnd(ms: LabelMatcher[]): LabelMatcher {
  if (ms.length === 0) return always;
  if (ms.length === 1) return ms[0]!;
  if (ms.length === 2) {
    const [a, b] = ms as [LabelMatcher, LabelMatcher];
    return (labels) => a(labels) && b(labels);
  }
  return (labels) => {
    for (let i = 0; i < ms.length; i++) if (!ms[i]!(labels)) return false;
    return true;
  };
}

function compileOr(ms: LabelMatcher[]): LabelMatcher {
  if (ms.length === 0) return never;
  if (ms.length === 1) return ms[0]!;
  if (ms.length === 2) {
    const [a, b] = ms as [LabelMatcher, LabelMatcher];
    return (labels) => a(labels) || b(labels);
  }
  return (labels) => {
    for (let i = 0; i < ms.length; i++) if (ms[i]!(labels)) return true;
    return false;
  };
}
