/**
 * Transaction: a batch of nftables commands built one call at a time and run as one
 * libnftables transaction (modelled on knftables' `Transaction`).
 *
 *   const t = tableRef('ip', 'calico');
 *   const tx = new Transaction()
 *     .add(table(t))
 *     .add(chain(t, 'filter-FORWARD', { type: 'filter', hook: 'forward', prio: 0 }))
 *     .flush(chain(t, 'cali-fw'))
 *     .add(rule(t, 'cali-fw', [ctState('established', 'related'), accept()]))
 *     .delete(ruleRef(t, 'cali-fw', 12));
 *   await nft.run(tx);          // NftContext, FakeNft or any NftClient
 *
 * API
 *   One method per verb (`add`, `create`, `insert`, `replace`, `flush`, `delete`), each taking an
 *   object built by `json/builders.ts` (`table`, `chain`, `rule`, `ruleRef`, `set`, `map`,
 *   `elements`, …); `command` takes a command already built (a diff's output). Each call checks
 *   that the verb fits the object (a rule is inserted, not a set; a rule is deleted or replaced
 *   by its handle; a base chain names its type, hook and priority together). A mistake does not
 *   throw where it was made: the first one is kept, later calls are ignored, and `run` fails with
 *   it (code `invalid`, `commandIndex` the command's position) before anything reaches nft, so a
 *   half-built batch is never applied. `document()` is the JSON text libnftables reads.
 *
 * Design
 *   Commands are kept by reference, not copied: a full sync holds tens of thousands of them, and
 *   the objects come from builders or a renderer that does not change them afterwards. The
 *   document starts with the schema metainfo, as `nft -j list` prints it, and is made once (until
 *   the next command), so a client wrapper that logs it costs no second serialisation.
 *
 * Thread-safety: a plain value; build it on one thread and hand it to `run`.
 */
import { NftablesError } from './errors.js';
import { commandsDocument, nftDocument } from './json/document.js';
import {
  NFT_FAMILIES,
  type NftChain,
  type NftCommand,
  type NftMap,
  type NftObjectRef,
  type NftRule,
  type NftSet,
  type NftTable,
} from './json/types.js';

/** What `flush` empties: a table's chains, a chain's rules, a set's or map's elements. */
export type NftFlushTarget = { table: NftTable } | { chain: NftChain } | { set: NftSet } | { map: NftMap };

/** What `NftClient.run` takes: a transaction, a command list, or nft input text as is. */
export type NftBatch = Transaction | readonly NftCommand[] | string;

const OBJECT_KINDS = ['table', 'chain', 'rule', 'set', 'map', 'element'] as const;
type ObjectKind = (typeof OBJECT_KINDS)[number];
type Verb = 'add' | 'create' | 'insert' | 'replace' | 'flush' | 'delete';
const KINDS_OF: Record<Verb, readonly string[]> = {
  add: OBJECT_KINDS,
  create: OBJECT_KINDS,
  insert: ['rule'],
  replace: ['rule'],
  flush: ['table', 'chain', 'set', 'map', 'ruleset'],
  delete: OBJECT_KINDS,
};
const FAMILIES: ReadonlySet<string> = new Set(NFT_FAMILIES);

/** One batch of nft commands, built with add/create/insert/replace/flush/delete and run at once. */
export class Transaction {
  readonly #commands: NftCommand[] = [];
  #error: NftablesError | undefined;
  /** The document, once made, until the next command (a wrapper and the client may both ask). */
  #text: string | undefined;

  /** A transaction of commands already built (in order), each checked as `command` does. */
  static of(commands: Iterable<NftCommand>): Transaction {
    const tx = new Transaction();
    for (const c of commands) tx.command(c);
    return tx;
  }

  /** Adds the object; for one that exists, nothing (a set or map: its new elements are added). */
  add(object: NftObjectRef): this {
    return this.#push('add', object, { add: object });
  }
  /** Like `add`, but the transaction fails with `exists` when the object is already there. */
  create(object: NftObjectRef): this {
    return this.#push('create', object, { create: object });
  }
  /** Inserts a rule at the top of its chain, or before the rule given by `handle` or `index`. */
  insert(object: { rule: NftRule }): this {
    return this.#push('insert', object, { insert: object });
  }
  /** Replaces the rule with `handle` in place. */
  replace(object: { rule: NftRule }): this {
    return this.#push('replace', object, { replace: object });
  }
  /** Empties a table, a chain, a set or a map. */
  flush(object: NftFlushTarget): this {
    return this.#push('flush', object, { flush: object });
  }
  /** Deletes a table, chain, set or map by name, a rule by handle, elements by value. */
  delete(object: NftObjectRef): this {
    return this.#push('delete', object, { delete: object });
  }

  /** A command already built (`{ add: … }`, `{ flush: … }`, …), checked like the verb's method. */
  command(c: NftCommand): this {
    const verbs = Object.keys(c);
    const verb = verbs[0] as Verb | 'list' | undefined;
    if (verbs.length !== 1 || verb === undefined || verb === 'list' || !(verb in KINDS_OF)) {
      return this.#fail(`a command has one verb of ${Object.keys(KINDS_OF).join(', ')}`);
    }
    const object = (c as Record<Verb, object>)[verb];
    return this.#push(verb, object, c);
  }

  /** The number of commands so far. */
  get size(): number {
    return this.#commands.length;
  }

  /** The first mistake made while building, which `run` fails with; undefined when none. */
  get error(): NftablesError | undefined {
    return this.#error;
  }

  /** The commands, in order; throws the first mistake made while building. */
  commands(): readonly NftCommand[] {
    if (this.#error) throw this.#error;
    return this.#commands;
  }

  /** The JSON document libnftables reads; throws the first mistake made while building. */
  document(): string {
    this.#text ??= JSON.stringify(nftDocument(this.commands()));
    return this.#text;
  }

  #push(verb: Verb, object: unknown, c: NftCommand): this {
    if (this.#error) return this;
    const problem = objectProblem(verb, object);
    if (problem !== undefined) return this.#fail(`${verb}: ${problem}`);
    this.#commands.push(c);
    this.#text = undefined;
    return this;
  }

  #fail(message: string): this {
    if (!this.#error) {
      const index = this.#commands.length;
      this.#error = new NftablesError('invalid', `transaction command ${index}: ${message}`, {
        commandIndex: index,
      });
    }
    return this;
  }
}

/**
 * The text a batch is sent as, or undefined for an empty one (nothing to run). A transaction
 * built with a mistake throws it here.
 */
export function batchText(batch: NftBatch): string | undefined {
  if (typeof batch === 'string') return batch;
  if (batch instanceof Transaction) return batch.size === 0 && !batch.error ? undefined : batch.document();
  return batch.length === 0 ? undefined : commandsDocument(batch);
}

const isName = (v: unknown): boolean => typeof v === 'string' && v.length > 0;
const isHandle = (v: unknown): boolean => Number.isInteger(v) && (v as number) > 0;

/** What is wrong with `object` as the object of `verb`, or undefined when nothing is. */
function objectProblem(verb: Verb, object: unknown): string | undefined {
  if (object === null || typeof object !== 'object') return 'no object';
  const kinds = Object.keys(object);
  const kind = kinds[0];
  if (kinds.length !== 1 || kind === undefined || !KINDS_OF[verb].includes(kind)) {
    return `takes one of ${KINDS_OF[verb].join(', ')}`;
  }
  const body = (object as Record<string, unknown>)[kind];
  if (kind === 'ruleset') return body === null ? undefined : 'ruleset takes null';
  if (body === null || typeof body !== 'object') return `${kind} has no body`;
  const o = body as Record<string, unknown>;
  if (!FAMILIES.has(o.family as string)) return `${kind} has no family of ${NFT_FAMILIES.join(', ')}`;
  if (kind === 'table') return isName(o.name) ? undefined : 'table has no name';
  if (!isName(o.table)) return `${kind} has no table`;
  return kindProblem(verb, kind as Exclude<ObjectKind, 'table'>, o);
}

function kindProblem(verb: Verb, kind: Exclude<ObjectKind, 'table'>, o: Record<string, unknown>) {
  switch (kind) {
    case 'chain': {
      if (!isName(o.name)) return 'chain has no name';
      const base = [o.type, o.hook, o.prio].filter((x) => x !== undefined).length;
      if (base !== 0 && base !== 3) return `base chain ${o.name} needs type, hook and prio together`;
      return undefined;
    }
    case 'rule': {
      if (!isName(o.chain)) return 'rule has no chain';
      if ((verb === 'delete' || verb === 'replace') && !isHandle(o.handle)) return 'rule has no handle';
      if (verb !== 'delete' && (!Array.isArray(o.expr) || o.expr.length === 0))
        return 'rule has no statements';
      return undefined;
    }
    case 'set':
    case 'map': {
      if (!isName(o.name)) return `${kind} has no name`;
      if ((verb === 'add' || verb === 'create') && o.type === undefined)
        return `${kind} ${o.name} has no type`;
      if (kind === 'map' && (verb === 'add' || verb === 'create') && o.map === undefined) {
        return `map ${o.name} has no value type`;
      }
      return undefined;
    }
    case 'element': {
      if (!isName(o.name)) return 'element names no set';
      if (!Array.isArray(o.elem) || o.elem.length === 0) return `element of ${o.name} has no values`;
      return undefined;
    }
  }
}
