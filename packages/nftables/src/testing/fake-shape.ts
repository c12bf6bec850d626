/**
 * The shape checks of FakeNft's parser: what nft's JSON parser refuses before it evaluates
 * anything (unknown verbs, objects and statements, missing keys, rules without a handle where one
 * is needed), with its error texts. Used by fake-ruleset.ts before a batch is evaluated.
 */
import { NFT_FAMILIES } from '../json/types.js';
import { FakeNftFailure, isRecord, parseError } from './fake-values.js';

const VERBS = new Set(['add', 'create', 'insert', 'replace', 'delete', 'flush', 'list']);
const STATEMENTS = new Set([
  'accept',
  'drop',
  'continue',
  'return',
  'jump',
  'goto',
  'match',
  'counter',
  'mangle',
  'masquerade',
  'snat',
  'dnat',
  'log',
  'vmap',
  'notrack',
  'reject',
]);
const MATCH_OPS = new Set(['==', '!=', '<', '>', '<=', '>=', 'in']);

export function checkCommandShape(c: unknown, i: number): void {
  if (!isRecord(c) || Object.keys(c).length !== 1) throw parseError('Malformed command object.', i);
  const verb = Object.keys(c)[0]!;
  if (verb === 'metainfo') throw parseError('FakeNft does not take metainfo objects in input.', i);
  if (!VERBS.has(verb)) throw parseError(`Unknown command object '${verb}'.`, i);
  const body = c[verb];
  if (!isRecord(body) || Object.keys(body).length !== 1) throw parseError(`Malformed ${verb} command.`, i);
  const kind = Object.keys(body)[0]!;
  const allowed: Record<string, string[]> = {
    add: ['table', 'chain', 'rule', 'set', 'map', 'element'],
    create: ['table', 'chain', 'rule', 'set', 'map', 'element'],
    insert: ['rule'],
    replace: ['rule'],
    delete: ['table', 'chain', 'rule', 'set', 'map', 'element'],
    flush: ['table', 'chain', 'set', 'map', 'ruleset'],
    list: ['ruleset', 'table', 'tables', 'chain', 'set', 'map'],
  };
  if (!allowed[verb]!.includes(kind)) throw parseError(`Unknown ${verb} object '${kind}'.`, i);
  const obj = body[kind];
  if (kind === 'ruleset' || kind === 'tables') {
    if (obj !== null && !isRecord(obj)) throw parseError(`Malformed ${kind} object.`, i);
    return;
  }
  if (!isRecord(obj)) throw parseError(`Malformed ${kind} object.`, i);
  const family = obj.family;
  if (typeof family !== 'string' || !(NFT_FAMILIES as readonly string[]).includes(family)) {
    throw parseError(`Invalid family '${String(family)}'.`, i);
  }
  const needsName = (key: string) => {
    if (typeof obj[key] !== 'string' || obj[key] === '')
      throw parseError(`Invalid ${kind} object: missing "${key}".`, i);
  };
  switch (kind) {
    case 'table':
      if (verb !== 'delete' || obj.handle === undefined) needsName('name');
      return;
    case 'chain':
      needsName('table');
      if (verb !== 'delete' || obj.handle === undefined) needsName('name');
      return;
    case 'set':
    case 'map':
      needsName('table');
      if (verb !== 'delete' || obj.handle === undefined) needsName('name');
      return;
    case 'element':
      needsName('table');
      needsName('name');
      if (!Array.isArray(obj.elem) && obj.elem === undefined)
        throw parseError('Invalid element object: missing "elem".', i);
      return;
    case 'rule': {
      needsName('table');
      needsName('chain');
      if (verb === 'delete' || verb === 'replace') {
        if (typeof obj.handle !== 'number') throw parseError(`Handle required to ${verb} a rule.`, i);
      }
      if (verb === 'delete') return;
      if (!Array.isArray(obj.expr) || obj.expr.length === 0)
        throw parseError('Invalid rule object: missing "expr".', i);
      obj.expr.forEach((s, si) => {
        checkStatementShape(s, i, si);
      });
      return;
    }
  }
}

function checkStatementShape(s: unknown, i: number, si: number): void {
  const fail = (what: string) =>
    new FakeNftFailure(
      `internal:0:0-0: Error: ${what}\n\ninternal:0:0-0: Error: Parsing expr array at index ${si} failed.\n\n` +
        `internal:0:0-0: Error: Parsing command array at index ${i} failed.\n\n`,
      'parse',
    );
  if (!isRecord(s) || Object.keys(s).length !== 1) throw fail('Malformed statement object.');
  const k = Object.keys(s)[0]!;
  if (!STATEMENTS.has(k)) throw fail(`Unknown statement object '${k}'.`);
  const v = s[k];
  switch (k) {
    case 'accept':
    case 'drop':
    case 'continue':
    case 'return':
    case 'notrack':
      if (v !== null) throw fail(`Malformed ${k} statement.`);
      return;
    case 'jump':
    case 'goto':
      if (!isRecord(v) || typeof v.target !== 'string')
        throw fail(`Invalid ${k} statement: missing "target".`);
      return;
    case 'match':
      if (!isRecord(v) || !MATCH_OPS.has(v.op as string) || v.left === undefined || v.right === undefined) {
        throw fail('Invalid match statement: "op", "left" and "right" are required.');
      }
      return;
    case 'counter':
      if (v === null || typeof v === 'string') return;
      if (!isRecord(v) || typeof v.packets !== 'number' || typeof v.bytes !== 'number') {
        throw fail('Invalid counter reference.');
      }
      return;
    case 'mangle':
      if (!isRecord(v) || v.key === undefined || v.value === undefined)
        throw fail('Invalid mangle statement.');
      return;
    case 'vmap':
      if (!isRecord(v) || v.key === undefined || v.data === undefined) throw fail('Invalid vmap statement.');
      return;
    default:
      if (v !== null && !isRecord(v)) throw fail(`Malformed ${k} statement.`);
  }
}
