/**
 * A `Map<K, Set<V>>` used as a multimap: the indexes of the calculation graph and the incremental
 * renderer keep their reverse lookups this way. An empty set is never left behind.
 */

/** Adds `v` under `k`; true when it was not there yet. */
export function addTo<K, V>(m: Map<K, Set<V>>, k: K, v: V): boolean {
  let s = m.get(k);
  if (!s) {
    s = new Set();
    m.set(k, s);
  }
  const had = s.has(v);
  s.add(v);
  return !had;
}

/** Removes `v` from under `k` (and `k` once empty); true when it was there. */
export function removeFrom<K, V>(m: Map<K, Set<V>>, k: K, v: V): boolean {
  const s = m.get(k);
  if (!s?.has(v)) return false;
  s.delete(v);
  if (s.size === 0) m.delete(k);
  return true;
}
