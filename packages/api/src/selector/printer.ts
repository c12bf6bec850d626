/**
 * The canonical text of a selector, as upstream prints it (and hashes it):
 *
 *   a == "v"   a != "v"   a contains "v"   a starts with "v"   a ends with "v"
 *   a in {"v1", "v2"}   a not in {"v1", "v2"}   has(a)   all()   global()
 *   !x   (x && y && z)   (x || y)
 *
 * Values are double-quoted unless they contain `"`, then single-quoted; set values are sorted by
 * code point and de-duplicated; `!` is a prefix without a space; every and/or chain is wrapped in
 * one pair of parentheses, nested chains keep their own.
 *
 * Differences from upstream, so that parse∘print is a fixed point for every tree: `!` over `!`
 * cancels (upstream prints `!(!has(a))` as `!!has(a)`, which re-parses as `has(a)`), a one-operand
 * and/or prints as its operand, an empty `and` as `all()` and an empty `or` as `!all()`.
 */

import { SelectorError } from '../errors.js';
import { columnOf, isLabelChar, MAX_LABEL_LENGTH, type SelectorNode, sortUnique } from './ast.js';

export function printSelector(node: SelectorNode): string {
  return print(node);
}

function print(node: SelectorNode): string {
  // Peel negations and degenerate chains so that what is printed re-parses to the same tree.
  let negated = false;
  let core = node;
  for (;;) {
    if (core.kind === 'not') {
      negated = !negated;
      core = core.operand;
    } else if ((core.kind === 'and' || core.kind === 'or') && core.operands.length === 1) {
      core = core.operands[0]!;
    } else {
      break;
    }
  }
  const text = printCore(core);
  return negated ? `!${text}` : text;
}

function printCore(node: SelectorNode): string {
  switch (node.kind) {
    case 'all':
      return 'all()';
    case 'global':
      return 'global()';
    case 'has':
      return `has(${checkLabel(node.label)})`;
    case 'eq':
      return `${checkLabel(node.label)} == ${quote(node.value)}`;
    case 'neq':
      return `${checkLabel(node.label)} != ${quote(node.value)}`;
    case 'contains':
      return `${checkLabel(node.label)} contains ${quote(node.value)}`;
    case 'startsWith':
      return `${checkLabel(node.label)} starts with ${quote(node.value)}`;
    case 'endsWith':
      return `${checkLabel(node.label)} ends with ${quote(node.value)}`;
    case 'in':
      return `${checkLabel(node.label)} in ${printSet(node.values)}`;
    case 'notIn':
      return `${checkLabel(node.label)} not in ${printSet(node.values)}`;
    case 'and':
      return node.operands.length === 0 ? 'all()' : printChain(node.operands, ' && ');
    case 'or':
      return node.operands.length === 0 ? '!all()' : printChain(node.operands, ' || ');
    case 'not':
      // Unreachable: print() peels every `not`.
      return print(node);
  }
}

function printChain(operands: readonly SelectorNode[], op: string): string {
  let out = `(${print(operands[0]!)}`;
  for (let i = 1; i < operands.length; i++) out += op + print(operands[i]!);
  return `${out})`;
}

function printSet(values: readonly string[]): string {
  const sorted = sortUnique(values);
  let out = '{';
  for (let i = 0; i < sorted.length; i++) {
    if (i > 0) out += ', ';
    out += quote(sorted[i]!);
  }
  return `${out}}`;
}

function quote(value: string): string {
  if (value.indexOf('"') < 0) return `"${value}"`;
  const single = value.indexOf("'");
  if (single >= 0) {
    // No escapes in the language: a value holding both quote characters cannot be written.
    throw new SelectorError(value, columnOf(value, single), 'a value cannot contain both \' and "');
  }
  return `'${value}'`;
}

/** Label names come from the parser or from code; refuse ones the parser could not read back. */
function checkLabel(label: string): string {
  if (label.length === 0) throw new SelectorError(label, 1, 'empty label name');
  if (label.length > MAX_LABEL_LENGTH) {
    throw new SelectorError(
      label,
      MAX_LABEL_LENGTH + 1,
      `label name is ${label.length} characters long, the limit is ${MAX_LABEL_LENGTH}`,
    );
  }
  for (let i = 0; i < label.length; i++) {
    if (!isLabelChar(label.charCodeAt(i))) {
      const ch = String.fromCodePoint(label.codePointAt(i)!);
      throw new SelectorError(
        label,
        columnOf(label, i),
        `invalid character ${JSON.stringify(ch)} in label name`,
      );
    }
  }
  return label;
}
