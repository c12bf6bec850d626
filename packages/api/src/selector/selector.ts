/**
 * The public face of the selector language: parse text into a compiled Selector, print canonical
 * text, validate, and the two rewrites policy conversion needs (label prefixing and AND-ing).
 */
import { SelectorError } from '../errors.js';
import { ALL_NODE, columnOf, isLabelChar, type SelectorNode } from './ast.js';
import { compileSelector, type LabelMatcher, type Labels } from './evaluator.js';
import { parseNode } from './parser.js';
import { printSelector } from './printer.js';
import { SelectorSyntaxFailure } from './tokenizer.js';

export interface Selector {
  readonly root: SelectorNode;
  /** Canonical text: equal selectors written differently print the same. */
  readonly text: string;
  matches(labels: Readonly<Record<string, string>>): boolean;
}

class CompiledSelector implements Selector {
  readonly root: SelectorNode;
  readonly matches: LabelMatcher;
  private canonical: string | undefined;

  constructor(root: SelectorNode) {
    this.root = root;
    this.matches = compileSelector(root);
  }

  get text(): string {
    if (this.canonical === undefined) this.canonical = printSelector(this.root);
    return this.canonical;
  }
}

/**
 * Parses selector text. Empty or blank (spaces and tabs) text is `all()`.
 * Throws SelectorError, with the 1-based column of the problem, for anything else that is not a selector.
 */
export function parseSelector(text: string): Selector {
  try {
    return new CompiledSelector(parseNode(text));
  } catch (e) {
    if (e instanceof SelectorSyntaxFailure) {
      throw new SelectorError(text, columnOf(text, e.index), e.reason);
    }
    throw e;
  }
}

/** The canonical text of a selector; throws SelectorError when it does not parse. */
export function canonicalSelector(text: string): string {
  return parseSelector(text).text;
}

/** `undefined` for a valid selector, otherwise why it is invalid and where, e.g. `invalid selector at column 3: …`. */
export function validateSelector(text: string): string | undefined {
  try {
    parseNode(text);
    return undefined;
  } catch (e) {
    if (e instanceof SelectorSyntaxFailure) {
      return `invalid selector at column ${columnOf(text, e.index)}: ${e.reason}`;
    }
    throw e;
  }
}

/** Parsed selectors by text, so repeated `selectorMatches` calls with the same text parse once. */
const cache = new Map<string, Selector>();
const CACHE_LIMIT = 1024;

/** Whether `labels` match the selector `text`; throws SelectorError when the text does not parse. */
export function selectorMatches(text: string, labels: Labels): boolean {
  let sel = cache.get(text);
  if (sel === undefined) {
    sel = parseSelector(text);
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    cache.set(text, sel);
  }
  return sel.matches(labels);
}

/**
 * A copy of `node` with `prefix` put in front of every label name, e.g. `pcns.` to turn a
 * namespace selector into one over the `pcns.*` labels endpoints inherit from their namespace
 * profile. Throws SelectorError if `prefix` holds a character a label name cannot.
 */
export function prefixSelectorLabels(node: SelectorNode, prefix: string): SelectorNode {
  for (let i = 0; i < prefix.length; i++) {
    if (!isLabelChar(prefix.charCodeAt(i))) {
      const ch = String.fromCodePoint(prefix.codePointAt(i)!);
      throw new SelectorError(
        prefix,
        columnOf(prefix, i),
        `invalid character ${JSON.stringify(ch)} in label prefix`,
      );
    }
  }
  return prefixNode(node, prefix);
}

function prefixNode(node: SelectorNode, prefix: string): SelectorNode {
  switch (node.kind) {
    case 'all':
    case 'global':
      return node;
    case 'has':
      return { kind: 'has', label: prefix + node.label };
    case 'eq':
    case 'neq':
    case 'contains':
    case 'startsWith':
    case 'endsWith':
      return { kind: node.kind, label: prefix + node.label, value: node.value };
    case 'in':
    case 'notIn':
      return { kind: node.kind, label: prefix + node.label, values: node.values };
    case 'not':
      return { kind: 'not', operand: prefixNode(node.operand, prefix) };
    case 'and':
    case 'or':
      return { kind: node.kind, operands: node.operands.map((op) => prefixNode(op, prefix)) };
  }
}

/**
 * The canonical text of the conjunction of `texts`: `(a && b)`, each part kept whole as if it
 * had been written in parentheses. Blank texts (no selector) are left out; with none left the
 * result is `all()`, with one it is that selector's canonical text. Throws SelectorError for a
 * text that does not parse.
 */
export function andSelectors(...texts: string[]): string {
  const operands: SelectorNode[] = [];
  for (const text of texts) {
    const root = parseSelector(text).root;
    if (root === ALL_NODE && isBlank(text)) continue;
    operands.push(root);
  }
  if (operands.length === 0) return 'all()';
  return printSelector(operands.length === 1 ? operands[0]! : { kind: 'and', operands });
}

function isBlank(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09) return false;
  }
  return true;
}
