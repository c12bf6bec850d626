/**
 * Messages between an {@link NftContext} and its worker thread. The worker only moves bytes
 * across the FFI boundary; every decision (flags, parsing, error classification) is made on the
 * caller's side, in plain TypeScript.
 */

/** `workerData` of a context's worker. */
export interface WorkerInit {
  /** Resolved path of the koffi package, so the worker loads the same copy as the caller. */
  koffiPath: string;
  /** The libnftables shared object (soname or path). */
  library: string;
  /** The libc shared object that provides `setns`. */
  libc: string;
  /** Network namespace file to enter before making the context; absent: stay where we are. */
  netnsPath?: string;
}

export type InitStage = 'koffi' | 'library' | 'netns-open' | 'setns' | 'context';

export type WorkerHello =
  | { kind: 'ready' }
  | { kind: 'init-failed'; stage: InitStage; message: string; errno?: string };

export interface RunRequest {
  kind: 'run';
  id: number;
  text: string;
  /** `nft_ctx_output_set_flags` value for this run. */
  flags: number;
  dryRun: boolean;
}

export interface CloseRequest {
  kind: 'close';
}

/** Asks the worker for its memory figures (see `NftContext.memoryUsage`). */
export interface MemoryRequest {
  kind: 'memory';
  id: number;
}

/** Asks for the handles and comments of one chain's rules (see `NftContext.ruleHandles`). */
export interface RuleHandlesRequest {
  kind: 'rule-handles';
  id: number;
  family: 'ip' | 'ip6';
  table: string;
  chain: string;
}

export type WorkerRequest = RunRequest | CloseRequest | MemoryRequest | RuleHandlesRequest;

export interface RuleHandlesReply {
  kind: 'rule-handles';
  id: number;
  /** `[handle, comment or null]` per rule, in the chain's order. */
  rules: [number, string | null][];
  /** Set when the dump failed. */
  error?: string;
  errno?: string;
}

export interface RunReply {
  kind: 'result';
  id: number;
  /** Return code of `nft_run_cmd_from_buffer`: 0 on success. */
  rc: number;
  output: string;
  error: string;
  /** Set when the FFI call itself threw (never a libnftables error). */
  crash?: string;
  /** Milliseconds spent in `nft_run_cmd_from_buffer`. */
  ms?: number;
}

export interface MemoryReply {
  kind: 'memory';
  id: number;
  /** The worker's own JS heap in use, bytes. */
  heapUsed: number;
  /** Bytes glibc's malloc has handed out and not had back, all threads (`mallinfo2`), if known. */
  mallocInUse?: number;
}

/** Output flags of libnftables (`enum` in `libnftables(3)`). */
export const NFT_CTX_OUTPUT_HANDLE = 1 << 3;
export const NFT_CTX_OUTPUT_JSON = 1 << 4;
export const NFT_CTX_OUTPUT_ECHO = 1 << 5;

/** `CLONE_NEWNET` from `<sched.h>`: the namespace type `setns` is asked to enter. */
export const CLONE_NEWNET = 0x40000000;
