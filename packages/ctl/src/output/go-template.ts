/**
 * A subset of Go's text/template, enough for calicoctl's `-o go-template=…`:
 *
 *   text {{.field.path}} {{"literal\n"}} {{range PIPE}}…{{else}}…{{end}} {{if PIPE}}…{{else if …}}…{{else}}…{{end}}
 *   {{with PIPE}}…{{end}} {{/* comment *\/}} trim markers {{- and -}}, variables $ and `range $i, $v := …`
 *   functions: join, joinAndTruncate, len, index, eq, ne, lt, le, gt, ge, not, and, or, printf, print, println
 *   pipes: {{.x | len}}
 *
 * Data is the decoded JSON of resources. Field names match JSON keys exactly, else
 * case-insensitively, and Go's embedded `ObjectMeta`/`TypeMeta` names are accepted, so both
 * `{{.metadata.name}}` and upstream's `{{.ObjectMeta.Name}}` work. A field asked of a one-element
 * list is asked of its element, so `{{range .items}}` works on the result list calicoctl passes.
 * Pure: no I/O.
 */
import { CtlError } from '../errors.js';
import { goNumber, goValue, joinAndTruncate } from './go-values.js';

type Node =
  | { t: 'text'; text: string }
  | { t: 'action'; pipe: Pipe }
  | { t: 'if'; branches: { pipe: Pipe; body: Node[] }[]; else?: Node[] }
  | { t: 'range'; pipe: Pipe; vars: string[]; body: Node[]; else?: Node[] }
  | { t: 'with'; pipe: Pipe; body: Node[]; else?: Node[] }
  | { t: 'assign'; name: string; pipe: Pipe };

type Arg =
  | { t: 'field'; base: 'dot' | string; path: string[] }
  | { t: 'lit'; value: unknown }
  | { t: 'call'; name: string; args: Arg[] }
  | { t: 'sub'; pipe: Pipe }
  | { t: 'chain'; of: Arg; path: string[] };
type Pipe = Arg[]; // commands joined by |; each command is an Arg (call or value)

const NO_VALUE = Symbol('no value');

function fail(msg: string): never {
  throw new CtlError('usage', `template: ${msg}`);
}

// ---- lexing of one action's inside ----------------------------------------------------------------

type Tok = {
  k: 'str' | 'num' | 'ident' | 'field' | 'var' | 'pipe' | 'lp' | 'rp' | 'chain' | 'assign' | 'comma';
  v: string;
};

function lexAction(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
    } else if (c === '"') {
      let j = i + 1;
      let s = '';
      while (j < src.length && src[j] !== '"') {
        if (src[j] === '\\') {
          const e = src[j + 1];
          const map: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', '"': '"' };
          s += map[e ?? ''] ?? e ?? '';
          j += 2;
        } else s += src[j++];
      }
      if (j >= src.length) fail('unterminated quoted string');
      out.push({ k: 'str', v: s });
      i = j + 1;
    } else if (c === '`') {
      const j = src.indexOf('`', i + 1);
      if (j < 0) fail('unterminated raw quoted string');
      out.push({ k: 'str', v: src.slice(i + 1, j) });
      i = j + 1;
    } else if (c === '|') {
      out.push({ k: 'pipe', v: c });
      i++;
    } else if (c === '(') {
      out.push({ k: 'lp', v: c });
      i++;
    } else if (c === ')') {
      out.push({ k: 'rp', v: c });
      i++;
      const chain = /^(?:\.[A-Za-z0-9_]+)+/.exec(src.slice(i));
      if (chain) {
        out.push({ k: 'chain', v: chain[0] });
        i += chain[0].length;
      }
    } else if (c === ',') {
      out.push({ k: 'comma', v: c });
      i++;
    } else if (c === ':' && src[i + 1] === '=') {
      out.push({ k: 'assign', v: ':=' });
      i += 2;
    } else if (c === '=') {
      out.push({ k: 'assign', v: '=' });
      i++;
    } else {
      const m =
        /^(\$[A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*|\.(?:[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)?|-?\d+(?:\.\d+)?|[A-Za-z_][A-Za-z0-9_]*)/.exec(
          src.slice(i),
        );
      if (!m) fail(`unexpected "${c}" in command`);
      const w = m[0];
      const k = w.startsWith('$') ? 'var' : w.startsWith('.') ? 'field' : /^-?\d/.test(w) ? 'num' : 'ident';
      out.push({ k, v: w });
      i += w.length;
    }
  }
  return out;
}

function parsePipe(toks: Tok[], pos: { i: number }, stop: (t: Tok) => boolean): Pipe {
  const cmds: Arg[] = [];
  let args: Arg[] = [];
  const flush = () => {
    if (args.length === 0) fail('missing value for command');
    const [head, ...rest] = args;
    if (head!.t === 'call') cmds.push({ t: 'call', name: head!.name, args: [...head!.args, ...rest] });
    else if (rest.length > 0) fail("can't give argument to non-function");
    else cmds.push(head!);
    args = [];
  };
  while (pos.i < toks.length && !stop(toks[pos.i]!)) {
    const t = toks[pos.i]!;
    pos.i++;
    switch (t.k) {
      case 'pipe':
        flush();
        break;
      case 'str':
        args.push({ t: 'lit', value: t.v });
        break;
      case 'num':
        args.push({ t: 'lit', value: Number(t.v) });
        break;
      case 'field':
        args.push({ t: 'field', base: 'dot', path: t.v === '.' ? [] : t.v.slice(1).split('.') });
        break;
      case 'var': {
        const [name, ...path] = t.v.split('.');
        args.push({ t: 'field', base: name!, path });
        break;
      }
      case 'ident':
        if (t.v === 'true' || t.v === 'false') args.push({ t: 'lit', value: t.v === 'true' });
        else if (t.v === 'nil') args.push({ t: 'lit', value: null });
        else if (args.length === 0) args.push({ t: 'call', name: t.v, args: [] });
        else args.push({ t: 'call', name: t.v, args: [] });
        break;
      case 'lp': {
        const sub = parsePipe(toks, pos, (x) => x.k === 'rp');
        if (toks[pos.i]?.k !== 'rp') fail('unclosed left paren');
        pos.i++;
        const chain = toks[pos.i]?.k === 'chain' ? toks[pos.i++]!.v.slice(1).split('.') : undefined;
        args.push(chain ? { t: 'chain', of: { t: 'sub', pipe: sub }, path: chain } : { t: 'sub', pipe: sub });
        break;
      }
      default:
        fail(`unexpected "${t.v}" in command`);
    }
  }
  if (args.length > 0) flush();
  if (cmds.length === 0) fail('missing value for command');
  return cmds;
}

function pipeOf(src: string): Pipe {
  const toks = lexAction(src);
  const pos = { i: 0 };
  const p = parsePipe(toks, pos, () => false);
  return p;
}

// ---- parsing of the template into a tree ------------------------------------------------------------

interface Item {
  text?: string;
  action?: string;
}

function split(template: string): Item[] {
  const items: Item[] = [];
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf('{{', i);
    if (open < 0) {
      items.push({ text: template.slice(i) });
      break;
    }
    let text = template.slice(i, open);
    let start = open + 2;
    if (template[start] === '-' && /\s/.test(template[start + 1] ?? '')) {
      text = text.replace(/\s+$/, '');
      start += 1;
    }
    if (text) items.push({ text });
    let close: number;
    if (template.startsWith('/*', start) || template.slice(start).trimStart().startsWith('/*')) {
      const endC = template.indexOf('*/', start);
      if (endC < 0) fail('unclosed comment');
      close = template.indexOf('}}', endC);
    } else {
      close = findClose(template, start);
    }
    if (close < 0) fail('unclosed action');
    let inner = template.slice(start, close);
    let next = close + 2;
    if (/\s-$/.test(inner)) {
      inner = inner.slice(0, -1);
      const m = /^\s*/.exec(template.slice(next))!;
      next += m[0].length;
    }
    items.push({ action: inner.trim() });
    i = next;
  }
  return items;
}

function findClose(s: string, from: number): number {
  let i = from;
  while (i < s.length) {
    const c = s[i];
    if (c === '"') {
      i++;
      while (i < s.length && s[i] !== '"') i += s[i] === '\\' ? 2 : 1;
      i++;
    } else if (c === '`') {
      i = s.indexOf('`', i + 1) + 1;
      if (i === 0) return -1;
    } else if (s.startsWith('}}', i)) return i;
    else i++;
  }
  return -1;
}

function parseTree(items: Item[]): Node[] {
  const pos = { i: 0 };
  const { nodes, end } = parseList(items, pos);
  if (end !== undefined) fail(`unexpected {{${end}}}`);
  return nodes;
}

function parseList(items: Item[], pos: { i: number }): { nodes: Node[]; end?: string } {
  const nodes: Node[] = [];
  while (pos.i < items.length) {
    const it = items[pos.i++]!;
    if (it.text !== undefined) {
      nodes.push({ t: 'text', text: it.text });
      continue;
    }
    const a = it.action!;
    if (a.startsWith('/*')) continue;
    const word = /^[a-z]+/.exec(a)?.[0];
    if (a === 'end' || a === 'else' || (word === 'else' && /^else\s+if\b/.test(a))) return { nodes, end: a };
    if (word === 'if') nodes.push(parseIf(a.slice(2), items, pos));
    else if (word === 'range' || word === 'with') {
      let rest = a.slice(word.length).trim();
      let vars: string[] = [];
      const m = /^(\$[A-Za-z0-9_]*)(?:\s*,\s*(\$[A-Za-z0-9_]*))?\s*:=/.exec(rest);
      if (m) {
        vars = m[2] ? [m[1]!, m[2]] : [m[1]!];
        rest = rest.slice(m[0].length);
      }
      const pipe = pipeOf(rest);
      const body = parseList(items, pos);
      let elseBody: Node[] | undefined;
      if (body.end === 'else') {
        const e = parseList(items, pos);
        if (e.end !== 'end') fail(`missing {{end}} for ${word}`);
        elseBody = e.nodes;
      } else if (body.end !== 'end') fail(`missing {{end}} for ${word}`);
      nodes.push(
        word === 'range'
          ? { t: 'range', pipe, vars, body: body.nodes, else: elseBody }
          : { t: 'with', pipe, body: body.nodes, else: elseBody },
      );
    } else {
      const m = /^(\$[A-Za-z0-9_]*)\s*:?=/.exec(a);
      if (m) nodes.push({ t: 'assign', name: m[1]!, pipe: pipeOf(a.slice(m[0].length)) });
      else nodes.push({ t: 'action', pipe: pipeOf(a) });
    }
  }
  return { nodes };
}

function parseIf(cond: string, items: Item[], pos: { i: number }): Node {
  const branches: { pipe: Pipe; body: Node[] }[] = [];
  let pipe = pipeOf(cond);
  for (;;) {
    const body = parseList(items, pos);
    branches.push({ pipe, body: body.nodes });
    if (body.end === 'end') return { t: 'if', branches };
    if (body.end === 'else') {
      const e = parseList(items, pos);
      if (e.end !== 'end') fail('missing {{end}} for if');
      return { t: 'if', branches, else: e.nodes };
    }
    if (body.end?.startsWith('else')) {
      pipe = pipeOf(body.end.replace(/^else\s+if/, ''));
      continue;
    }
    fail('missing {{end}} for if');
  }
}

// ---- evaluation -------------------------------------------------------------------------------------

const GO_ALIASES: Record<string, string> = { objectmeta: 'metadata', listmeta: 'metadata' };

function field(v: unknown, name: string): unknown {
  if (Array.isArray(v) && v.length === 1) return field(v[0], name);
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    if (v === NO_VALUE || v === undefined || v === null) return NO_VALUE;
    fail(`can't evaluate field ${name} in type ${typeof v}`);
  }
  const o = v as Record<string, unknown>;
  if (name.toLowerCase() === 'typemeta') return o;
  if (Object.hasOwn(o, name)) return o[name];
  const lower = name.toLowerCase();
  const alias = GO_ALIASES[lower];
  if (alias && Object.hasOwn(o, alias)) return o[alias];
  for (const k of Object.keys(o)) if (k.toLowerCase() === lower) return o[k];
  return NO_VALUE;
}

function truth(v: unknown): boolean {
  if (v === NO_VALUE || v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v as object).length > 0;
  return true;
}

function show(v: unknown): string {
  if (v === NO_VALUE) return '<no value>';
  return goValue(v);
}

function printf(format: string, args: unknown[]): string {
  let i = 0;
  return format.replace(/%([-+# 0]*\d*(?:\.\d+)?)([vsdqtf%])/g, (_m, _flags: string, verb: string) => {
    if (verb === '%') return '%';
    const a = args[i++];
    if (verb === 'q') return JSON.stringify(show(a));
    if (verb === 'd' && typeof a === 'number') return String(Math.trunc(a));
    if (verb === 'f' && typeof a === 'number') return a.toFixed(6);
    return show(a);
  });
}

function compare(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  fail('incompatible types for comparison');
}

type Scope = { dot: unknown; vars: Map<string, unknown> };

const FUNCS: Record<string, (args: unknown[]) => unknown> = {
  join: ([items, sep]) => joinAndTruncate(items === NO_VALUE ? null : items, String(sep ?? '')),
  joinAndTruncate: ([items, sep, max]) =>
    joinAndTruncate(items === NO_VALUE ? null : items, String(sep ?? ''), Number(max ?? 0)),
  len: ([v]) => {
    if (typeof v === 'string' || Array.isArray(v)) return v.length;
    if (v !== null && typeof v === 'object') return Object.keys(v).length;
    if (v === NO_VALUE || v === null || v === undefined) return 0;
    fail(`len of type ${typeof v}`);
  },
  index: ([v, ...keys]) => {
    let cur = v;
    for (const k of keys) {
      if (Array.isArray(cur)) cur = cur[Number(k)];
      else if (cur !== null && typeof cur === 'object') cur = (cur as Record<string, unknown>)[String(k)];
      else return NO_VALUE;
    }
    return cur === undefined ? NO_VALUE : cur;
  },
  eq: ([a, ...rest]) =>
    rest.some((b) => a === b || (a === NO_VALUE && b === '') || (b === NO_VALUE && a === '')),
  ne: ([a, b]) => a !== b,
  lt: ([a, b]) => compare(a, b) < 0,
  le: ([a, b]) => compare(a, b) <= 0,
  gt: ([a, b]) => compare(a, b) > 0,
  ge: ([a, b]) => compare(a, b) >= 0,
  not: ([a]) => !truth(a),
  and: (args) => {
    for (const a of args) if (!truth(a)) return a;
    return args[args.length - 1];
  },
  or: (args) => {
    for (const a of args) if (truth(a)) return a;
    return args[args.length - 1];
  },
  printf: ([f, ...args]) => printf(String(f), args),
  print: (args) => args.map(show).join(''),
  println: (args) => `${args.map(show).join(' ')}\n`,
};

function evalArg(a: Arg, scope: Scope): unknown {
  switch (a.t) {
    case 'lit':
      return a.value;
    case 'sub':
      return evalPipe(a.pipe, scope);
    case 'chain': {
      let v = evalArg(a.of, scope);
      for (const p of a.path) v = field(v, p);
      return v;
    }
    case 'field': {
      let v: unknown;
      if (a.base === 'dot') v = scope.dot;
      else {
        if (!scope.vars.has(a.base)) fail(`undefined variable "${a.base}"`);
        v = scope.vars.get(a.base);
      }
      for (const p of a.path) v = field(v, p);
      return v;
    }
    case 'call': {
      const f = FUNCS[a.name];
      if (!f) fail(`function "${a.name}" not defined`);
      return f(a.args.map((x) => evalArg(x, scope)));
    }
  }
}

function evalPipe(p: Pipe, scope: Scope): unknown {
  let v: unknown;
  p.forEach((cmd, i) => {
    if (i > 0) {
      if (cmd.t !== 'call') fail('non-function in pipeline');
      const f = FUNCS[cmd.name];
      if (!f) fail(`function "${cmd.name}" not defined`);
      v = f([...cmd.args.map((x) => evalArg(x, scope)), v]);
    } else v = evalArg(cmd, scope);
  });
  return v;
}

function exec(nodes: Node[], scope: Scope, out: string[]): void {
  for (const n of nodes) {
    switch (n.t) {
      case 'text':
        out.push(n.text);
        break;
      case 'action':
        out.push(show(evalPipe(n.pipe, scope)));
        break;
      case 'assign':
        scope.vars.set(n.name, evalPipe(n.pipe, scope));
        break;
      case 'if': {
        const hit = n.branches.find((b) => truth(evalPipe(b.pipe, scope)));
        if (hit) exec(hit.body, scope, out);
        else if (n.else) exec(n.else, scope, out);
        break;
      }
      case 'with': {
        const v = evalPipe(n.pipe, scope);
        if (truth(v)) exec(n.body, { dot: v, vars: new Map(scope.vars) }, out);
        else if (n.else) exec(n.else, scope, out);
        break;
      }
      case 'range': {
        const v = evalPipe(n.pipe, scope);
        const entries: [unknown, unknown][] = Array.isArray(v)
          ? v.map((x, i) => [i, x])
          : v !== null && typeof v === 'object'
            ? Object.keys(v)
                .sort()
                .map((k) => [k, (v as Record<string, unknown>)[k]])
            : v === NO_VALUE || v === null || v === undefined
              ? []
              : fail(`range can't iterate over ${show(v)}`);
        if (entries.length === 0) {
          if (n.else) exec(n.else, scope, out);
          break;
        }
        for (const [k, x] of entries) {
          const vars = new Map(scope.vars);
          if (n.vars.length === 1) vars.set(n.vars[0]!, x);
          if (n.vars.length === 2) {
            vars.set(n.vars[0]!, k);
            vars.set(n.vars[1]!, x);
          }
          exec(n.body, { dot: x, vars }, out);
        }
        break;
      }
    }
  }
}

/** Render `template` over `data`. Throws `CtlError('usage')` naming the problem for a bad template. */
export function renderGoTemplate(template: string, data: unknown): string {
  const tree = parseTree(split(template));
  const out: string[] = [];
  exec(tree, { dot: data, vars: new Map([['$', data]]) }, out);
  return out.join('');
}

export { goNumber };
