/**
 * An incremental index of which selectors match which labelled items (upstream
 * `felix/labelindex`), built so that a change re-evaluates only what it can affect.
 *
 *   selectors ──┐                       ┌── onMatchStarted(selId, itemId)
 *               ├─► SelectorIndex ──────┤
 *   items ──────┘   (label-key index)   └── onMatchStopped(selId, itemId)
 *
 * A selector's verdict depends only on the labels it names. So:
 *   - an item's label change re-evaluates just the selectors naming a changed key;
 *   - a new item is evaluated against the selectors naming one of its keys; every other selector
 *     sees it as it sees the empty label set, which is computed once per selector;
 *   - a new selector is evaluated against the items carrying one of its keys; every other item
 *     gets the selector's empty-label verdict;
 *   - removals evaluate nothing.
 * `evaluations` counts calls to `Selector.matches` so tests can hold the index to this.
 *
 * Thread-safety: none needed (single-threaded); callbacks run synchronously inside the update.
 */
import type { Selector, SelectorNode } from '@calico-ts/api';
import { addTo, removeFrom } from '../multimap.js';

export type Labels = Readonly<Record<string, string>>;

export interface SelectorIndexCallbacks {
  onMatchStarted(selectorId: string, itemId: string): void;
  onMatchStopped(selectorId: string, itemId: string): void;
}

interface SelectorEntry {
  readonly selector: Selector;
  readonly keys: readonly string[];
  readonly matchesEmpty: boolean;
}

const EMPTY: Labels = Object.freeze({});

/** Every label name a selector mentions. */
export function selectorLabelKeys(node: SelectorNode, into: Set<string> = new Set()): Set<string> {
  switch (node.kind) {
    case 'all':
    case 'global':
      break;
    case 'not':
      selectorLabelKeys(node.operand, into);
      break;
    case 'and':
    case 'or':
      for (const op of node.operands) selectorLabelKeys(op, into);
      break;
    default:
      into.add(node.label);
  }
  return into;
}

const NONE: ReadonlySet<string> = new Set();

export class SelectorIndex {
  /** Number of `Selector.matches` calls made so far. */
  evaluations = 0;

  private readonly selectors = new Map<string, SelectorEntry>();
  private readonly keyToSelectors = new Map<string, Set<string>>();
  private readonly emptyMatchers = new Set<string>();
  private readonly items = new Map<string, Labels>();
  private readonly keyToItems = new Map<string, Set<string>>();
  private readonly selToItems = new Map<string, Set<string>>();
  private readonly itemToSels = new Map<string, Set<string>>();

  constructor(private readonly callbacks: SelectorIndexCallbacks) {}

  private evaluate(sel: Selector, labels: Labels): boolean {
    this.evaluations++;
    return sel.matches(labels);
  }

  hasSelector(id: string): boolean {
    return this.selectors.has(id);
  }

  /** Items the selector currently matches. */
  itemsMatching(selectorId: string): ReadonlySet<string> {
    return this.selToItems.get(selectorId) ?? NONE;
  }

  /** Selectors currently matching the item. */
  selectorsMatching(itemId: string): ReadonlySet<string> {
    return this.itemToSels.get(itemId) ?? NONE;
  }

  labelsOf(itemId: string): Labels | undefined {
    return this.items.get(itemId);
  }

  private start(selId: string, itemId: string): void {
    addTo(this.selToItems, selId, itemId);
    addTo(this.itemToSels, itemId, selId);
    this.callbacks.onMatchStarted(selId, itemId);
  }

  private stop(selId: string, itemId: string): void {
    removeFrom(this.selToItems, selId, itemId);
    removeFrom(this.itemToSels, itemId, selId);
    this.callbacks.onMatchStopped(selId, itemId);
  }

  /** Adds or replaces a selector; a selector with the same canonical text is left alone. */
  updateSelector(id: string, selector: Selector): void {
    const old = this.selectors.get(id);
    if (old && old.selector.text === selector.text) return;
    if (old) this.unindexSelector(id, old);
    const keys = [...selectorLabelKeys(selector.root)];
    const entry: SelectorEntry = { selector, keys, matchesEmpty: this.evaluate(selector, EMPTY) };
    this.selectors.set(id, entry);
    for (const k of keys) addTo(this.keyToSelectors, k, id);
    if (entry.matchesEmpty) this.emptyMatchers.add(id);

    const now = new Set<string>();
    const candidates = new Set<string>();
    for (const k of keys) for (const item of this.keyToItems.get(k) ?? NONE) candidates.add(item);
    for (const item of candidates) {
      if (this.evaluate(selector, this.items.get(item)!)) now.add(item);
    }
    if (entry.matchesEmpty) {
      for (const item of this.items.keys()) if (!candidates.has(item)) now.add(item);
    }
    const before = this.selToItems.get(id) ?? NONE;
    for (const item of [...before]) if (!now.has(item)) this.stop(id, item);
    for (const item of now) if (!before.has(item)) this.start(id, item);
  }

  private unindexSelector(id: string, entry: SelectorEntry): void {
    for (const k of entry.keys) removeFrom(this.keyToSelectors, k, id);
    this.emptyMatchers.delete(id);
  }

  deleteSelector(id: string): void {
    const entry = this.selectors.get(id);
    if (!entry) return;
    this.unindexSelector(id, entry);
    this.selectors.delete(id);
    for (const item of [...(this.selToItems.get(id) ?? NONE)]) this.stop(id, item);
  }

  /** Adds or replaces an item's labels. */
  updateItem(id: string, labels: Labels): void {
    const old = this.items.get(id);
    this.items.set(id, labels);
    const changed = new Set<string>();
    if (old === undefined) {
      for (const k of Object.keys(labels)) changed.add(k);
    } else {
      for (const k of Object.keys(labels)) if (old[k] !== labels[k]) changed.add(k);
      for (const k of Object.keys(old)) if (!Object.hasOwn(labels, k)) changed.add(k);
      if (changed.size === 0) return;
    }
    if (old)
      for (const k of Object.keys(old)) if (!Object.hasOwn(labels, k)) removeFrom(this.keyToItems, k, id);
    for (const k of Object.keys(labels)) addTo(this.keyToItems, k, id);

    const candidates = new Set<string>();
    for (const k of changed) for (const s of this.keyToSelectors.get(k) ?? NONE) candidates.add(s);
    const before = this.itemToSels.get(id) ?? NONE;
    for (const selId of candidates) {
      const now = this.evaluate(this.selectors.get(selId)!.selector, labels);
      const was = before.has(selId);
      if (now && !was) this.start(selId, id);
      else if (!now && was) this.stop(selId, id);
    }
    if (old === undefined) {
      // Selectors naming none of the item's keys see it as the empty label set.
      for (const selId of this.emptyMatchers) if (!candidates.has(selId)) this.start(selId, id);
    }
  }

  deleteItem(id: string): void {
    const old = this.items.get(id);
    if (old === undefined) return;
    for (const k of Object.keys(old)) removeFrom(this.keyToItems, k, id);
    this.items.delete(id);
    for (const selId of [...(this.itemToSels.get(id) ?? NONE)]) this.stop(selId, id);
  }
}
