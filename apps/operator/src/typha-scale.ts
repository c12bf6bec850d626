/**
 * How many calico-typha replicas a cluster of `nodes` nodes runs: upstream operator's rule
 * (`GetExpectedTyphaScale`): one Typha for every 200 nodes plus one spare, at least three past
 * four nodes, two for three or four nodes, one for one or two (one fewer than the nodes where
 * possible, so a rescheduled Typha has somewhere to go). Pure.
 */
export function expectedTyphaReplicas(nodes: number): number {
  if (nodes <= 2) return 1;
  if (nodes <= 4) return 2;
  return Math.max(3, Math.floor(nodes / 200) + 2);
}
