/**
 * Dispatch (upstream `felix/rules/dispatch.go`): the chains that look an interface up in its
 * verdict map and go to that endpoint's chain. A workload interface the maps do not know is
 * dropped; a host endpoint miss falls through, or with an all-interfaces host endpoint goes to its
 * chain unless the interface is a workload's.
 */
import { drop, eq, goto, meta, type NftExpr, returnVerdict, setRef, vmap } from '@calico-ts/nftables';
import type { HostEndpointLayout } from './host-endpoint-renderer.js';
import {
  ALL_INTERFACES,
  CHAIN,
  endpointChainName,
  FILTER,
  FROM_HOST_ENDPOINT_FORWARD_PREFIX,
  FROM_HOST_ENDPOINT_PREFIX,
  MANGLE,
  RAW,
  TO_HOST_ENDPOINT_FORWARD_PREFIX,
  TO_HOST_ENDPOINT_PREFIX,
} from './names.js';
import type { NftRuleDesired } from './ruleset.js';
import { type TableBuilder, type TableEnv, workloadWildcards } from './table-builder.js';

/** The workload and host endpoint dispatch chains, in every stage. */
export function renderDispatchChains(t: TableBuilder, env: TableEnv, heps: HostEndpointLayout): void {
  // Dispatch chains: look the interface up in its map; an unknown workload interface is dropped.
  const iif = meta('iifname');
  const oif = meta('oifname');
  t.chain(FILTER + CHAIN.fromWlDispatch, [
    { expr: [vmap(iif, setRef(FILTER + CHAIN.fromWlDispatch))] },
    { expr: [drop()], comment: 'Unknown interface' },
  ]);
  t.chain(FILTER + CHAIN.toWlDispatch, [
    { expr: [vmap(oif, setRef(FILTER + CHAIN.toWlDispatch))] },
    { expr: [drop()], comment: 'Unknown interface' },
  ]);
  // Host endpoint dispatch: a miss in the map falls through; with an all-interfaces host endpoint,
  // a non-workload interface then goes to its chain.
  const wildcards = workloadWildcards(env.config);
  const hepDispatch = (
    layer: string,
    chain: string,
    key: NftExpr,
    prefix: string,
    toAllIfaces: boolean,
  ): void => {
    const rules: NftRuleDesired[] = [{ expr: [vmap(key, setRef(layer + chain))] }];
    if (toAllIfaces) {
      for (const w of wildcards) {
        rules.push({
          expr: [eq(key, w), returnVerdict()],
          comment: 'Workload interfaces skip the all-interfaces host endpoint',
        });
      }
      rules.push({
        expr: [goto(layer + endpointChainName(prefix, ALL_INTERFACES))],
        comment: 'All-interfaces host endpoint',
      });
    }
    t.chain(layer + chain, rules);
  };
  const hasAll = heps.hasAllInterfaces;
  hepDispatch(FILTER, CHAIN.fromHostEndpoint, iif, FROM_HOST_ENDPOINT_PREFIX, hasAll);
  hepDispatch(FILTER, CHAIN.toHostEndpoint, oif, TO_HOST_ENDPOINT_PREFIX, hasAll);
  hepDispatch(FILTER, CHAIN.fromHepForward, iif, FROM_HOST_ENDPOINT_FORWARD_PREFIX, hasAll);
  hepDispatch(FILTER, CHAIN.toHepForward, oif, TO_HOST_ENDPOINT_FORWARD_PREFIX, hasAll);
  hepDispatch(RAW, CHAIN.fromHostEndpoint, iif, FROM_HOST_ENDPOINT_PREFIX, false);
  hepDispatch(RAW, CHAIN.toHostEndpoint, oif, TO_HOST_ENDPOINT_PREFIX, false);
  hepDispatch(MANGLE, CHAIN.fromHostEndpoint, iif, FROM_HOST_ENDPOINT_PREFIX, heps.allInterfacesPreDNAT);
}
