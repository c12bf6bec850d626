/**
 * Recursive-descent parser from selector text to a SelectorNode.
 *
 *   or        := and ( "||" and )*
 *   and       := operation ( "&&" operation )*
 *   operation := "!"* ( has(l) | all() | global() | "(" or ")"
 *                     | l (== | != | contains | starts with | ends with) "str"
 *                     | l (in | not in) "{" [ "str" ( "," "str" )* [","] ] "}" )
 *
 * Leading `!`s toggle (an even number cancels out), and `!` applied to an already negated operand
 * (`!(!x)`) cancels too, so the tree never holds a `not` directly under a `not` and printing then
 * re-parsing is stable. A one-element chain yields its element, not a one-operand and/or.
 */
import {
  ALL_NODE,
  GLOBAL_NODE,
  MAX_NESTING_DEPTH,
  type SelectorNode,
  shortenForMessage,
  sortUnique,
} from './ast.js';
import { SelectorSyntaxFailure, Tok, Tokenizer } from './tokenizer.js';

/** Parses `text`; throws SelectorSyntaxFailure. Empty or blank text is `all()`. */
export function parseNode(text: string): SelectorNode {
  const tz = new Tokenizer(text);
  if (tz.peek() === Tok.EOF) return ALL_NODE;
  const node = parseOr(tz, 0);
  if (tz.peek() !== Tok.EOF) {
    throw new SelectorSyntaxFailure(tz.start, `unexpected ${tz.describe()} after a complete expression`);
  }
  return node;
}

function parseOr(tz: Tokenizer, depth: number): SelectorNode {
  const first = parseAnd(tz, depth);
  if (tz.peek() !== Tok.Or) return first;
  const operands = [first];
  while (tz.peek() === Tok.Or) {
    tz.advance();
    operands.push(parseAnd(tz, depth));
  }
  return { kind: 'or', operands };
}

function parseAnd(tz: Tokenizer, depth: number): SelectorNode {
  const first = parseOperation(tz, depth);
  if (tz.peek() !== Tok.And) return first;
  const operands = [first];
  while (tz.peek() === Tok.And) {
    tz.advance();
    operands.push(parseOperation(tz, depth));
  }
  return { kind: 'and', operands };
}

function parseOperation(tz: Tokenizer, depth: number): SelectorNode {
  let negated = false;
  while (tz.peek() === Tok.Not) {
    negated = !negated;
    tz.advance();
  }
  let node: SelectorNode;
  switch (tz.peek()) {
    case Tok.Has:
      node = { kind: 'has', label: tz.value };
      tz.advance();
      break;
    case Tok.All:
      node = ALL_NODE;
      tz.advance();
      break;
    case Tok.Global:
      node = GLOBAL_NODE;
      tz.advance();
      break;
    case Tok.Label:
      node = parseLabelOperation(tz);
      break;
    case Tok.LParen: {
      if (depth >= MAX_NESTING_DEPTH) {
        throw new SelectorSyntaxFailure(
          tz.start,
          `parentheses nested more than ${MAX_NESTING_DEPTH} levels deep`,
        );
      }
      tz.advance();
      node = parseOr(tz, depth + 1);
      if (tz.peek() !== Tok.RParen) {
        throw new SelectorSyntaxFailure(tz.start, `expected ")" but found ${tz.describe()}`);
      }
      tz.advance();
      break;
    }
    case Tok.EOF:
      throw new SelectorSyntaxFailure(tz.start, 'unexpected end of selector, expected an expression');
    default:
      throw new SelectorSyntaxFailure(tz.start, `unexpected ${tz.describe()}, expected an expression`);
  }
  if (!negated) return node;
  return node.kind === 'not' ? node.operand : { kind: 'not', operand: node };
}

type ValueOpKind = 'eq' | 'neq' | 'contains' | 'startsWith' | 'endsWith';

function parseLabelOperation(tz: Tokenizer): SelectorNode {
  const label = tz.value;
  tz.advance();
  let kind: ValueOpKind;
  switch (tz.peek()) {
    case Tok.Eq:
      kind = 'eq';
      break;
    case Tok.Ne:
      kind = 'neq';
      break;
    case Tok.Contains:
      kind = 'contains';
      break;
    case Tok.StartsWith:
      kind = 'startsWith';
      break;
    case Tok.EndsWith:
      kind = 'endsWith';
      break;
    case Tok.In:
    case Tok.NotIn:
      return parseSetOperation(tz, label);
    default:
      throw new SelectorSyntaxFailure(
        tz.start,
        `expected an operator after label "${shortenForMessage(label)}" but found ${tz.describe()}`,
      );
  }
  const op = tz.describe();
  tz.advance();
  if (tz.peek() !== Tok.String) {
    throw new SelectorSyntaxFailure(
      tz.start,
      `expected a quoted string after ${op} but found ${tz.describe()}`,
    );
  }
  const value = tz.value;
  tz.advance();
  return { kind, label, value };
}

function parseSetOperation(tz: Tokenizer, label: string): SelectorNode {
  const kind = tz.peek() === Tok.In ? 'in' : 'notIn';
  const op = tz.describe();
  tz.advance();
  if (tz.peek() !== Tok.LBrace) {
    throw new SelectorSyntaxFailure(
      tz.start,
      `expected a set literal {…} after ${op} but found ${tz.describe()}`,
    );
  }
  tz.advance();
  const values: string[] = [];
  let wantValue = true;
  while (tz.peek() === Tok.String) {
    values.push(tz.value);
    tz.advance();
    if (tz.peek() !== Tok.Comma) {
      wantValue = false;
      break;
    }
    tz.advance();
  }
  if (tz.peek() !== Tok.RBrace) {
    const expected = wantValue ? 'a quoted string or "}"' : '"," or "}"';
    throw new SelectorSyntaxFailure(
      tz.start,
      `expected ${expected} in set literal but found ${tz.describe()}`,
    );
  }
  tz.advance();
  return { kind, label, values: sortUnique(values) };
}
