/**
 * TypeScript shapes of the nftables JSON schema (`libnftables-json(5)`, schema version 1, as
 * libnftables 1.0.6 reads and prints it), limited to what Felix programs: tables, chains, rules,
 * sets, maps and elements; matches on payload, meta, ct and fib; verdicts, counter, mangle,
 * masquerade, log, verdict maps and set lookups.
 *
 * Input and output share these shapes. Output adds `handle` everywhere and prints some things in
 * a normal form (an anonymous `counter` as `{ packets, bytes }`, a one-element flag list as the
 * flag alone, a protocol match that a later header match implies left out).
 */

export const NFT_FAMILIES = ['ip', 'ip6', 'inet', 'arp', 'bridge', 'netdev'] as const;
export type NftFamily = (typeof NFT_FAMILIES)[number];

// ---------------------------------------------------------------------------------------------
// Expressions

/** Immediate values. A string starting with `@` names a set; `*` is a wildcard. */
export type NftImmediate = string | number | boolean;

export type NftMetaKey =
  | 'length'
  | 'protocol'
  | 'priority'
  | 'random'
  | 'mark'
  | 'iif'
  | 'iifname'
  | 'iiftype'
  | 'oif'
  | 'oifname'
  | 'oiftype'
  | 'skuid'
  | 'skgid'
  | 'nftrace'
  | 'rtclassid'
  | 'pkttype'
  | 'cpu'
  | 'iifgroup'
  | 'oifgroup'
  | 'cgroup'
  | 'nfproto'
  | 'l4proto'
  | 'secpath';

export type NftFibResult = 'oif' | 'oifname' | 'type';
export type NftFibFlag = 'saddr' | 'daddr' | 'mark' | 'iif' | 'oif';

export interface NftPayloadExpr {
  payload: { protocol: string; field: string } | { base: 'll' | 'nh' | 'th'; offset: number; len: number };
}
export interface NftMetaExpr {
  meta: { key: NftMetaKey };
}
export interface NftCtExpr {
  ct: { key: string; family?: 'ip' | 'ip6'; dir?: 'original' | 'reply' };
}
export interface NftFibExpr {
  fib: { result: NftFibResult; flags: NftFibFlag | NftFibFlag[] };
}
export interface NftPrefixExpr {
  prefix: { addr: NftExpr; len: number };
}
export interface NftRangeExpr {
  range: [NftExpr, NftExpr];
}
/** An anonymous set; for an anonymous map, a list of `[key, value]` pairs. */
export interface NftAnonSetExpr {
  set: NftExpr | (NftExpr | [NftExpr, NftExpr])[];
}
export interface NftConcatExpr {
  concat: NftExpr[];
}
export interface NftMapExpr {
  map: { key: NftExpr; data: NftExpr };
}
export type NftBinaryOp = '&' | '|' | '^' | '<<' | '>>';
export type NftBinaryExpr = { [K in NftBinaryOp]: { [P in K]: [NftExpr, NftExpr] } }[NftBinaryOp];
/** A set element with properties (timeout, comment); otherwise the plain value stands for it. */
export interface NftElemExpr {
  elem: { val: NftExpr; timeout?: number; expires?: number; comment?: string };
}

export type NftExpr =
  | NftImmediate
  | NftExpr[]
  | NftPayloadExpr
  | NftMetaExpr
  | NftCtExpr
  | NftFibExpr
  | NftPrefixExpr
  | NftRangeExpr
  | NftAnonSetExpr
  | NftConcatExpr
  | NftMapExpr
  | NftBinaryExpr
  | NftElemExpr
  | NftVerdict;

// ---------------------------------------------------------------------------------------------
// Statements

export type NftVerdict =
  | { accept: null }
  | { drop: null }
  | { continue: null }
  | { return: null }
  | { jump: { target: string } }
  | { goto: { target: string } };

export type NftMatchOp = '==' | '!=' | '<' | '>' | '<=' | '>=' | 'in';

export interface NftMatchStmt {
  match: { op: NftMatchOp; left: NftExpr; right: NftExpr };
}
/** `null` (or `{}`) on input makes an anonymous counter from zero; a string names a counter. */
export interface NftCounterStmt {
  counter: null | { packets: number; bytes: number } | string;
}
export interface NftMangleStmt {
  mangle: { key: NftExpr; value: NftExpr };
}
export type NftNatFlag = 'random' | 'fully-random' | 'persistent';
export interface NftMasqueradeStmt {
  masquerade: null | { port?: NftExpr; flags?: NftNatFlag | NftNatFlag[] };
}
export interface NftSnatStmt {
  snat: { addr?: NftExpr; family?: 'ip' | 'ip6'; port?: NftExpr; flags?: NftNatFlag | NftNatFlag[] };
}
export interface NftDnatStmt {
  dnat: { addr?: NftExpr; family?: 'ip' | 'ip6'; port?: NftExpr; flags?: NftNatFlag | NftNatFlag[] };
}
export type NftLogLevel = 'emerg' | 'alert' | 'crit' | 'err' | 'warn' | 'notice' | 'info' | 'debug' | 'audit';
export type NftLogFlag = 'tcp sequence' | 'tcp options' | 'ip options' | 'skuid' | 'ether' | 'all';
export interface NftLogStmt {
  log: null | {
    prefix?: string;
    group?: number;
    snaplen?: number;
    'queue-threshold'?: number;
    level?: NftLogLevel;
    flags?: NftLogFlag | NftLogFlag[];
  };
}
export interface NftVmapStmt {
  vmap: { key: NftExpr; data: NftExpr };
}
export interface NftNotrackStmt {
  notrack: null;
}
export interface NftRejectStmt {
  reject: null | { type?: 'tcp reset' | 'icmpx' | 'icmp' | 'icmpv6'; expr?: NftExpr };
}

export type NftStatement =
  | NftVerdict
  | NftMatchStmt
  | NftCounterStmt
  | NftMangleStmt
  | NftMasqueradeStmt
  | NftSnatStmt
  | NftDnatStmt
  | NftLogStmt
  | NftVmapStmt
  | NftNotrackStmt
  | NftRejectStmt;

// ---------------------------------------------------------------------------------------------
// Ruleset objects

export type NftChainType = 'filter' | 'nat' | 'route';
export type NftHook = 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting' | 'ingress' | 'egress';
export type NftChainPolicy = 'accept' | 'drop';

export interface NftTable {
  family: NftFamily;
  name: string;
  handle?: number;
}

export interface NftChain {
  family: NftFamily;
  table: string;
  name: string;
  handle?: number;
  /** Base chains only: type, hook and prio come together; policy defaults to accept. */
  type?: NftChainType;
  hook?: NftHook;
  prio?: number;
  policy?: NftChainPolicy;
  dev?: string;
}

export interface NftRule {
  family: NftFamily;
  table: string;
  chain: string;
  /** On output and in delete/replace; on insert, the rule to insert before. */
  handle?: number;
  /** On add, the position of the rule to add after; on insert, the rule to insert before. */
  index?: number;
  expr?: NftStatement[];
  comment?: string;
}

export type NftSetFlag = 'constant' | 'interval' | 'timeout' | 'dynamic';
/** A set element: a value, or for maps a `[key, value]` pair. */
export type NftSetElem = NftExpr | [NftExpr, NftExpr];

export interface NftSet {
  family: NftFamily;
  table: string;
  name: string;
  handle?: number;
  /** A datatype such as `ipv4_addr`, `ifname`, `inet_service`, `mark`; a list for concatenations. */
  type?: string | string[];
  policy?: 'performance' | 'memory';
  flags?: NftSetFlag | NftSetFlag[];
  elem?: NftSetElem[];
  timeout?: number;
  'gc-interval'?: number;
  size?: number;
  comment?: string;
}

export interface NftMap extends NftSet {
  /** The datatype of values: `verdict`, `mark`, `ipv4_addr`, … */
  map?: string;
}

export interface NftElement {
  family: NftFamily;
  table: string;
  /** The set's (or map's) name. */
  name: string;
  elem: NftSetElem[];
}

export interface NftMetainfo {
  version: string;
  release_name: string;
  json_schema_version: number;
}

/** One entry of a listing: what `nft -j list …` prints after the metainfo. */
export type NftListObject =
  | { table: NftTable }
  | { chain: NftChain }
  | { rule: NftRule }
  | { set: NftSet }
  | { map: NftMap }
  | { element: NftElement };

// ---------------------------------------------------------------------------------------------
// Commands

export type NftObjectRef =
  | { table: NftTable }
  | { chain: NftChain }
  | { rule: NftRule }
  | { set: NftSet }
  | { map: NftMap }
  | { element: NftElement };

export type NftCommand =
  | { add: NftObjectRef }
  | { create: NftObjectRef }
  | { insert: { rule: NftRule } }
  | { replace: { rule: NftRule } }
  | { delete: NftObjectRef }
  | {
      flush:
        | { table: NftTable }
        | { chain: NftChain }
        | { set: NftSet }
        | { map: NftMap }
        | { ruleset: null };
    }
  | {
      list:
        | { ruleset: null }
        | { table: NftTable }
        | { chain: NftChain }
        | { set: NftSet }
        | { map: NftMap }
        | { tables: { family?: NftFamily } | null };
    };

/** The document handed to `nft -j -f -` / `nft_run_cmd_from_buffer`. */
export interface NftDocument {
  /** The schema metainfo (optional, first), then the commands in order. */
  readonly nftables: readonly (
    | NftCommand
    | {
        /** Which version of the JSON schema the commands are written in. */
        readonly metainfo: {
          /** 1: the only version libnftables knows. */
          readonly json_schema_version: 1;
        };
      }
  )[];
}

export type NftCommandVerb = 'add' | 'create' | 'insert' | 'replace' | 'delete' | 'flush' | 'list';

/** What one `nft_run_cmd_from_buffer` gives back. */
export interface NftResult {
  /**
   * The `nftables` array(s) of the output without metainfo: listed objects for `list`, the
   * commands with their new handles when `echo` was asked for, else empty.
   */
  readonly items: readonly unknown[];
  /** The raw output text. */
  readonly output: string;
  /** Text nft wrote to its error output although the batch succeeded (warnings), else ''. */
  readonly warnings: string;
  /**
   * Milliseconds libnftables took for the call (parse, evaluate, cache fetches, the kernel's
   * commit), timed on the thread that made it; absent where there is no such call (fakes).
   */
  readonly runMs?: number;
}

export interface NftRunOptions {
  /**
   * Print what was committed, as `nft -e` does: the commands come back in `items` with the
   * handles the kernel gave the new tables, chains, sets and rules.
   */
  echo?: boolean;
  /** Check the batch against the kernel's ruleset without committing it (`nft -c`). */
  dryRun?: boolean;
}
