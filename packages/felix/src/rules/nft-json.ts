/**
 * The few shapes of the libnftables JSON command format (`libnftables-json(5)`) that the rule
 * renderer emits: `{"nftables": [{"add": {"table": …}}, …]}`.
 *
 * Kept local for now; to be unified with `@calico-ts/nftables`' `src/json/` types.
 */

export type NftFamily = 'ip' | 'ip6';

export interface NftTable {
  readonly family: NftFamily;
  readonly name: string;
}

export type NftChainType = 'filter' | 'nat' | 'route';
export type NftHook = 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting';

export interface NftChain {
  readonly family: NftFamily;
  readonly table: string;
  readonly name: string;
  readonly type?: NftChainType;
  readonly hook?: NftHook;
  readonly prio?: number;
  readonly policy?: 'accept' | 'drop';
}

export interface NftRule {
  readonly family: NftFamily;
  readonly table: string;
  readonly chain: string;
  readonly expr: readonly NftStatement[];
  readonly comment?: string;
}

export interface NftSet {
  readonly family: NftFamily;
  readonly table: string;
  readonly name: string;
  readonly type: string | readonly string[];
  readonly flags?: readonly string[];
  readonly elem?: readonly NftExpression[];
}

export interface NftMap {
  readonly family: NftFamily;
  readonly table: string;
  readonly name: string;
  readonly type: string | readonly string[];
  readonly map: 'verdict';
  readonly elem?: readonly (readonly [NftExpression, NftVerdict])[];
}

export interface NftElement {
  readonly family: NftFamily;
  readonly table: string;
  readonly name: string;
  readonly elem: readonly (NftExpression | readonly [NftExpression, NftVerdict])[];
}

export type NftObject =
  | { readonly table: NftTable }
  | { readonly chain: NftChain }
  | { readonly rule: NftRule }
  | { readonly set: NftSet }
  | { readonly map: NftMap }
  | { readonly element: NftElement };

/** One command of a batch; libnftables applies a whole batch as one transaction. */
export type NftCommand =
  | { readonly add: NftObject }
  | { readonly delete: NftObject }
  | {
      /** One rule, by the handle the kernel gave it. */
      readonly delete: {
        /** The rule's chain and handle. */
        readonly rule: NftRuleRef;
      };
    }
  | {
      readonly flush:
        | { readonly chain: NftChain }
        | {
            /** A set to empty. */
            readonly set: NftRef;
          }
        | {
            /** A map to empty. */
            readonly map: NftRef;
          };
    };

/** A rule named by its handle, for `delete`. */
export interface NftRuleRef {
  readonly family: NftFamily;
  readonly table: string;
  readonly chain: string;
  readonly handle: number;
}

/** A set or map named for `flush`, which needs no type. */
export interface NftRef {
  readonly family: NftFamily;
  readonly table: string;
  readonly name: string;
}

/** The document handed to `nft -j -f -` / `nft_run_cmd_from_buffer`. */
export interface NftDocument {
  readonly nftables: readonly (NftCommand | { readonly metainfo: { readonly json_schema_version: 1 } })[];
}

// ---- expressions and statements --------------------------------------------------------------

export type NftExpression =
  | string
  | number
  | readonly string[]
  | { readonly payload: { readonly protocol: string; readonly field: string } }
  | { readonly meta: { readonly key: string } }
  | { readonly ct: { readonly key: string } }
  | { readonly fib: { readonly result: string; readonly flags: readonly string[] } }
  | { readonly prefix: { readonly addr: string; readonly len: number } }
  | { readonly range: readonly [NftExpression, NftExpression] }
  | { readonly set: readonly NftExpression[] }
  | { readonly concat: readonly NftExpression[] }
  | { readonly '&': readonly [NftExpression, NftExpression] }
  | { readonly '|': readonly [NftExpression, NftExpression] };

export type NftVerdict =
  | { readonly accept: null }
  | { readonly drop: null }
  | { readonly return: null }
  | { readonly jump: { readonly target: string } }
  | { readonly goto: { readonly target: string } };

/** The source port (or range) a nat statement picks from. */
export type NftNatPort = number | { readonly range: readonly [number, number] };

export type NftMatchOp = '==' | '!=' | 'in';

export type NftStatement =
  | NftVerdict
  | {
      readonly match: {
        readonly op: NftMatchOp;
        readonly left: NftExpression;
        readonly right: NftExpression;
      };
    }
  | { readonly mangle: { readonly key: NftExpression; readonly value: NftExpression } }
  | { readonly vmap: { readonly key: NftExpression; readonly data: NftExpression } }
  | { readonly log: { readonly prefix?: string; readonly level?: string } }
  | {
      readonly masquerade: null | {
        /** The source ports to pick from. */
        readonly port: NftNatPort;
      };
    }
  | {
      readonly snat: {
        readonly addr: string;
        /** The source ports to pick from; any when absent. */
        readonly port?: NftNatPort;
      };
    }
  | { readonly counter: null }
  | { readonly notrack: null };
