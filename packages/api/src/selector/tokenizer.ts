/**
 * On-demand tokenizer for the selector language. The parser pulls one token at a time, so the
 * first problem from the left is the one reported.
 *
 * The token grammar is context sensitive, as upstream's is: right after a label, a word is read as
 * an operator (`in`, `not in`/`notin`, `contains`, `starts with`, `ends with`; each must end at a
 * word boundary), anywhere else as a label name or as `has(`, `all(`, `global(`. Whitespace is
 * space and tab only; string literals run to the next matching quote and have no escapes.
 */
import { isLabelChar, MAX_LABEL_LENGTH, scanLabel, shortenForMessage } from './ast.js';

export const Tok = {
  None: -1,
  EOF: 0,
  Label: 1,
  String: 2,
  LBrace: 3,
  RBrace: 4,
  Comma: 5,
  Eq: 6,
  Ne: 7,
  In: 8,
  Not: 9,
  NotIn: 10,
  Contains: 11,
  StartsWith: 12,
  EndsWith: 13,
  All: 14,
  Has: 15,
  LParen: 16,
  RParen: 17,
  And: 18,
  Or: 19,
  Global: 20,
} as const;
export type TokenKind = (typeof Tok)[keyof typeof Tok];

/** How a token is named in error messages. */
const TOKEN_NAMES: Record<TokenKind, string> = {
  [Tok.None]: 'nothing',
  [Tok.EOF]: 'end of selector',
  [Tok.Label]: 'label',
  [Tok.String]: 'string',
  [Tok.LBrace]: '"{"',
  [Tok.RBrace]: '"}"',
  [Tok.Comma]: '","',
  [Tok.Eq]: '"=="',
  [Tok.Ne]: '"!="',
  [Tok.In]: '"in"',
  [Tok.Not]: '"!"',
  [Tok.NotIn]: '"not in"',
  [Tok.Contains]: '"contains"',
  [Tok.StartsWith]: '"starts with"',
  [Tok.EndsWith]: '"ends with"',
  [Tok.All]: '"all()"',
  [Tok.Has]: '"has(…)"',
  [Tok.LParen]: '"("',
  [Tok.RParen]: '")"',
  [Tok.And]: '"&&"',
  [Tok.Or]: '"||"',
  [Tok.Global]: '"global()"',
};

/**
 * A syntax problem at a UTF-16 index of the input. Thrown inside the parser only and turned into a
 * `SelectorError` (or a validation message) at the public edge; it carries no stack so failing
 * inputs stay cheap.
 */
export class SelectorSyntaxFailure {
  constructor(
    readonly index: number,
    readonly reason: string,
  ) {}
}

function fail(index: number, reason: string): never {
  throw new SelectorSyntaxFailure(index, reason);
}

const SPACE = 0x20;
const TAB = 0x09;

function skipWhitespace(text: string, from: number): number {
  let i = from;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c !== SPACE && c !== TAB) break;
    i++;
  }
  return i;
}

function atWordBoundary(text: string, i: number): boolean {
  return i >= text.length || !isLabelChar(text.charCodeAt(i));
}

/**
 * Word operators that may follow a label, tried in this order. A two-word operator allows any
 * whitespace, or none, between its words (`not in`, `notin`); only the end needs a word boundary.
 */
const OPERATOR_WORDS: readonly (readonly [string, string, TokenKind])[] = [
  ['contains', '', Tok.Contains],
  ['starts', 'with', Tok.StartsWith],
  ['ends', 'with', Tok.EndsWith],
  ['not', 'in', Tok.NotIn],
  ['in', '', Tok.In],
];

/** Matches the operator `first [second]` at `i`; returns the index after it, or -1. */
function cutOperator(text: string, i: number, first: string, second: string): number {
  if (!text.startsWith(first, i)) return -1;
  let j = i + first.length;
  if (second !== '') {
    j = skipWhitespace(text, j);
    if (!text.startsWith(second, j)) return -1;
    j += second.length;
  }
  return atWordBoundary(text, j) ? j : -1;
}

export class Tokenizer {
  /** Kind of the current token. */
  kind: TokenKind = Tok.None;
  /** UTF-16 index where the current token starts (the input length at EOF). */
  start = 0;
  /** Label name (Label, Has) or literal contents (String) of the current token. */
  value = '';
  private pos = 0;

  constructor(readonly text: string) {
    this.advance();
  }

  /** The current token's kind (a method, so that type narrowing does not outlive `advance()`). */
  peek(): TokenKind {
    return this.kind;
  }

  /** A human name for the current token, for error messages. */
  describe(): string {
    if (this.kind === Tok.Label) return `label "${shortenForMessage(this.value)}"`;
    if (this.kind === Tok.String) return `string ${JSON.stringify(shortenForMessage(this.value))}`;
    return TOKEN_NAMES[this.kind];
  }

  /** Moves to the next token. Throws SelectorSyntaxFailure on text that is not a token. */
  advance(): void {
    const text = this.text;
    const n = text.length;
    const i = skipWhitespace(text, this.pos);
    const prevKind = this.kind;
    this.start = i;
    if (i >= n) {
      this.kind = Tok.EOF;
      this.pos = i;
      return;
    }
    const c = text.charCodeAt(i);
    switch (c) {
      case 0x28: // (
        this.set(Tok.LParen, i + 1);
        return;
      case 0x29: // )
        this.set(Tok.RParen, i + 1);
        return;
      case 0x7b: // {
        this.set(Tok.LBrace, i + 1);
        return;
      case 0x7d: // }
        this.set(Tok.RBrace, i + 1);
        return;
      case 0x2c: // ,
        this.set(Tok.Comma, i + 1);
        return;
      case 0x22: // "
      case 0x27: {
        // '
        const end = text.indexOf(c === 0x22 ? '"' : "'", i + 1);
        if (end < 0) fail(i, 'unterminated string literal');
        this.value = text.slice(i + 1, end);
        this.set(Tok.String, end + 1);
        return;
      }
      case 0x3d: // =
        if (text.charCodeAt(i + 1) !== 0x3d) fail(i, 'expected "==" (a single "=" is not an operator)');
        this.set(Tok.Eq, i + 2);
        return;
      case 0x21: // !
        if (text.charCodeAt(i + 1) === 0x3d) this.set(Tok.Ne, i + 2);
        else this.set(Tok.Not, i + 1);
        return;
      case 0x26: // &
        if (text.charCodeAt(i + 1) !== 0x26) fail(i, 'expected "&&" (a single "&" is not an operator)');
        this.set(Tok.And, i + 2);
        return;
      case 0x7c: // |
        if (text.charCodeAt(i + 1) !== 0x7c) fail(i, 'expected "||" (a single "|" is not an operator)');
        this.set(Tok.Or, i + 2);
        return;
    }
    if (prevKind === Tok.Label) {
      this.operatorAfterLabel(i);
      return;
    }
    if (text.startsWith('has(', i)) {
      const labelStart = skipWhitespace(text, i + 4);
      const labelEnd = this.labelAt(labelStart, 'expected a label name inside "has("');
      const close = skipWhitespace(text, labelEnd);
      if (text.charCodeAt(close) !== 0x29) fail(close, 'expected ")" to close "has("');
      this.value = text.slice(labelStart, labelEnd);
      this.set(Tok.Has, close + 1);
      return;
    }
    if (text.startsWith('all(', i)) {
      const close = skipWhitespace(text, i + 4);
      if (text.charCodeAt(close) !== 0x29) fail(close, 'expected ")" to close "all("');
      this.set(Tok.All, close + 1);
      return;
    }
    if (text.startsWith('global(', i)) {
      const close = skipWhitespace(text, i + 7);
      if (text.charCodeAt(close) !== 0x29) fail(close, 'expected ")" to close "global("');
      this.set(Tok.Global, close + 1);
      return;
    }
    const end = this.labelAt(i, '');
    this.value = text.slice(i, end);
    this.set(Tok.Label, end);
  }

  private set(kind: TokenKind, next: number): void {
    this.kind = kind;
    this.pos = next;
  }

  /**
   * Scans a label name at `i` and returns the index after it. With no label there, fails with
   * `missing`, or (when `missing` is empty) names the character found.
   */
  private labelAt(i: number, missing: string): number {
    const text = this.text;
    const end = scanLabel(text, i);
    if (end === i) {
      if (missing !== '' || i >= text.length) fail(i, missing || 'unexpected end of selector');
      const ch = String.fromCodePoint(text.codePointAt(i)!);
      fail(i, `unexpected character ${JSON.stringify(ch)}`);
    }
    if (end - i > MAX_LABEL_LENGTH) {
      fail(i, `label name is ${end - i} characters long, the limit is ${MAX_LABEL_LENGTH}`);
    }
    return end;
  }

  private operatorAfterLabel(i: number): void {
    for (const [first, second, kind] of OPERATOR_WORDS) {
      const next = cutOperator(this.text, i, first, second);
      if (next >= 0) {
        this.set(kind, next);
        return;
      }
    }
    fail(
      i,
      `expected an operator (==, !=, in, not in, contains, starts with, ends with) after label "${shortenForMessage(this.value)}"`,
    );
  }
}
