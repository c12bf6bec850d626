/**
 * KVs whose value arrives already parsed. The Kubernetes API hands the datastore objects, not
 * text: turning each into its etcd-style JSON text only for the typed client (or IPAM) to parse
 * it again cost a list of N objects N stringifies and N parses (~3× client-node's CPU per list).
 * A parsed KV keeps the data and makes `value`'s text on first read only; readers that want the
 * data take a copy of it instead (`kvJson`, `kvJsonExact`), which costs a fraction of a parse.
 *
 *   backend object ──► parsedKV(key, data) ──► kvJson(kv) / kvJsonExact(kv): a deep copy, no text
 *                                          └─► kv.value: goJson(data), made once, when asked
 *
 * The data is never handed out itself: every copy is the reader's to change, as a fresh
 * `JSON.parse` result would be, and the text made later still says what the backend returned.
 * A KV from any other backend (or a spread copy of a parsed one) is plain: the readers parse
 * its text as before.
 *
 * Pure calculation: no I/O.
 */
import { goJson, parseJsonExact } from '../go-json.js';
import type { KV } from './kv-store.js';

/**
 * A KV holding its value as data. `value` is an own enumerable accessor, so the KV reads, spreads
 * and compares as a plain one; the data sits in a private field, which a spread copy does not
 * take (the copy is plain, with the text). A class, not an object literal with a getter and a
 * WeakMap: ~0.3 against ~3 µs per KV here, which matters at thousands per list.
 */
class ParsedKV implements KV {
  readonly key: string;
  declare value: string;
  readonly modRevision: string;
  readonly createRevision: string;
  #data: unknown;
  /** Makes `#data` on first use, for a KV whose data nobody may read (`lazyParsedKV`). */
  #load: (() => unknown) | undefined;
  #text: string | undefined;

  static readonly #value: PropertyDescriptor = {
    get(this: ParsedKV): string {
      this.#text ??= goJson(this.#loaded());
      return this.#text;
    },
    set(this: ParsedKV, v: string) {
      this.#text = v;
      this.#data = undefined;
      this.#load = undefined;
    },
    enumerable: true,
    configurable: true,
  };

  constructor(key: string, data: unknown, modRevision: string, createRevision: string, load?: () => unknown) {
    this.key = key;
    Object.defineProperty(this, 'value', ParsedKV.#value);
    this.modRevision = modRevision;
    this.createRevision = createRevision;
    this.#data = data;
    this.#load = load;
  }

  #loaded(): unknown {
    if (this.#load) {
      this.#data = this.#load();
      this.#load = undefined;
    }
    return this.#data;
  }

  /** The data of a parsed KV whose value was not replaced since; undefined for any other KV. */
  static dataOf(kv: KV): unknown {
    return #data in kv ? kv.#loaded() : undefined;
  }
}

/**
 * A KV holding `data`, the value as `parseJsonExact` would return it (plain JSON data; integers
 * beyond 2^53 as bigint). The caller gives the data up: it must not change it afterwards.
 */
export function parsedKV(key: string, data: unknown, modRevision: string, createRevision: string): KV {
  return new ParsedKV(key, data, modRevision, createRevision);
}

/**
 * `parsedKV` whose data is made by `load` when something first reads it (its value or its data):
 * for a KV that is often only looked at for its revision (what a write returns), whose data is
 * dear to make (an IPAM block's exact 64-bit sequence numbers). `load` must not throw.
 */
export function lazyParsedKV(
  key: string,
  load: () => unknown,
  modRevision: string,
  createRevision: string,
): KV {
  return new ParsedKV(key, undefined, modRevision, createRevision, load);
}

/** The value as `JSON.parse(kv.value)` returns it (integers beyond 2^53 rounded); the caller's own. */
export function kvJson(kv: KV): unknown {
  const data = ParsedKV.dataOf(kv);
  return data === undefined ? JSON.parse(kv.value) : copyJson(data, false);
}

/** The value as `parseJsonExact(kv.value)` returns it (integers beyond 2^53 as bigint); the caller's own. */
export function kvJsonExact(kv: KV): unknown {
  const data = ParsedKV.dataOf(kv);
  return data === undefined ? parseJsonExact(kv.value) : copyJson(data, true);
}

/**
 * What `JSON.parse(goJson(v))` (or `parseJsonExact`, with `exact`) would return, without the text:
 * undefined members are left out (null in arrays), -0 is 0, non-finite numbers are null, a bigint
 * is kept (exact) or rounded to a number.
 */
export function copyJson(v: unknown, exact: boolean): unknown {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      return Number.isFinite(v) ? (v === 0 ? 0 : v) : null;
    case 'bigint':
      return exact && (v > Number.MAX_SAFE_INTEGER || v < Number.MIN_SAFE_INTEGER) ? v : Number(v);
    case 'object': {
      if (v === null) return null;
      if (Array.isArray(v)) {
        const a = new Array<unknown>(v.length);
        for (let i = 0; i < v.length; i++) {
          const x: unknown = v[i];
          a[i] =
            x === undefined || typeof x === 'function' || typeof x === 'symbol' ? null : copyJson(x, exact);
        }
        return a;
      }
      if (typeof (v as { toJSON?: unknown }).toJSON === 'function') {
        return exact ? parseJsonExact(goJson(v)) : JSON.parse(goJson(v));
      }
      const o: Record<string, unknown> = {};
      for (const k in v) {
        if (!Object.hasOwn(v, k)) continue;
        const x = (v as Record<string, unknown>)[k];
        if (x === undefined || typeof x === 'function' || typeof x === 'symbol') continue;
        if (k === '__proto__') {
          Object.defineProperty(o, k, {
            value: copyJson(x, exact),
            enumerable: true,
            writable: true,
            configurable: true,
          });
        } else o[k] = copyJson(x, exact);
      }
      return o;
    }
    default:
      return undefined;
  }
}
