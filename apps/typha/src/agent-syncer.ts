/**
 * How an agent picks its syncer: Typha when FELIX_TYPHAADDR or FELIX_TYPHAK8SSERVICENAME is set
 * (as upstream Felix decides), else its own `Syncer` over the datastore. Both get the same
 * `SyncerOptions` (sources and callbacks); the Typha client ignores the sources, since Typha's
 * syncer type stands for them.
 *
 *   TyphaAddr "host:port"            ──► that address
 *   TyphaK8sServiceName + Namespace  ──► the Service's Endpoints, port named `calico-typha`
 *                                        (asked again before every connection)
 *   TyphaCAFile + TyphaCertFile + TyphaKeyFile ──► TLS, server checked for TyphaCN / TyphaURISAN
 */
import { readFile } from 'node:fs/promises';
import { Syncer, type SyncerOptions } from '@calico-ts/datastore';
import { TyphaClient, type TyphaClientTls } from './client.js';
import type { SyncerType } from './protocol.js';

/** The agent configuration that decides (Felix's parameters of the same names). */
export interface AgentTyphaConfig {
  readonly FelixHostname: string;
  readonly TyphaAddr: string;
  readonly TyphaK8sServiceName: string;
  readonly TyphaK8sNamespace: string;
  /** Seconds. */
  readonly TyphaReadTimeout: number;
  /** Seconds; absent: 10. */
  readonly TyphaWriteTimeout?: number;
  readonly TyphaCAFile: string;
  readonly TyphaCertFile: string;
  readonly TyphaKeyFile: string;
  readonly TyphaCN: string;
  readonly TyphaURISAN: string;
}

/** What the agent adds: who it is, and how to read a Service's Endpoints (Kubernetes API). */
export interface AgentSyncerDeps {
  readonly client: string;
  readonly syncerType: SyncerType;
  /** `GET /api/v1/namespaces/<ns>/endpoints/<name>`'s body; needed with TyphaK8sServiceName. */
  readonly getEndpoints?: (namespace: string, name: string) => Promise<unknown>;
  /** Renames or drops updates (see `TyphaClientOptions.filter`). */
  readonly filter?: (source: string, key: string) => string | undefined;
}

/** The port name upstream's calico-typha Service gives its port. */
export const TYPHA_PORT_NAME = 'calico-typha';

/** Whether the configuration sends the agent to Typha. */
export function usesTypha(cfg: AgentTyphaConfig): boolean {
  return cfg.TyphaAddr !== '' || cfg.TyphaK8sServiceName !== '';
}

/** The `host:port` addresses in a v1 Endpoints object for the port named `portName`. */
export function addressesFromEndpoints(endpoints: unknown, portName = TYPHA_PORT_NAME): string[] {
  const out: string[] = [];
  const subsets = (endpoints as { subsets?: unknown[] } | undefined)?.subsets ?? [];
  for (const s of subsets as {
    addresses?: { ip?: string }[];
    ports?: { name?: string; port?: number }[];
  }[]) {
    const port = s.ports?.find((p) => p.name === portName)?.port;
    if (port === undefined) continue;
    for (const a of s.addresses ?? []) {
      if (a.ip) out.push(a.ip.includes(':') ? `[${a.ip}]:${port}` : `${a.ip}:${port}`);
    }
  }
  return out;
}

/** Reads the TLS files named by the configuration; undefined when none is named. */
export function tlsLoaderOf(cfg: AgentTyphaConfig): (() => Promise<TyphaClientTls>) | undefined {
  if (cfg.TyphaCAFile === '' && cfg.TyphaCertFile === '' && cfg.TyphaKeyFile === '') return undefined;
  return async () => ({
    ca: await readFile(cfg.TyphaCAFile),
    cert: await readFile(cfg.TyphaCertFile),
    key: await readFile(cfg.TyphaKeyFile),
    ...(cfg.TyphaCN !== '' ? { serverCN: cfg.TyphaCN } : {}),
    ...(cfg.TyphaURISAN !== '' ? { serverURISAN: cfg.TyphaURISAN } : {}),
  });
}

/** The agent's syncer: a Typha client when configured, else a `Syncer` over `opts.sources`. */
export function agentSyncer(
  opts: SyncerOptions,
  cfg: AgentTyphaConfig,
  deps: AgentSyncerDeps,
): Syncer | TyphaClient {
  if (!usesTypha(cfg)) return new Syncer(opts);
  const { TyphaAddr: addr, TyphaK8sServiceName: svc, TyphaK8sNamespace: ns } = cfg;
  const get = deps.getEndpoints;
  if (addr === '' && !get) {
    throw new Error(
      'FELIX_TYPHAK8SSERVICENAME is set but there is no Kubernetes API to read its Endpoints from',
    );
  }
  const tls = tlsLoaderOf(cfg);
  return new TyphaClient({
    addresses: addr !== '' ? () => [addr] : async () => addressesFromEndpoints(await get!(ns, svc)),
    node: cfg.FelixHostname,
    client: deps.client,
    syncerType: deps.syncerType,
    ...(tls ? { tls } : {}),
    onUpdate: opts.onUpdate,
    onInSync: opts.onInSync,
    ...(opts.onConnection ? { onConnection: opts.onConnection } : {}),
    ...(deps.filter ? { filter: deps.filter } : {}),
    readTimeoutMs: cfg.TyphaReadTimeout * 1000,
    ...(cfg.TyphaWriteTimeout !== undefined ? { writeTimeoutMs: cfg.TyphaWriteTimeout * 1000 } : {}),
    ...(opts.retryMs !== undefined ? { retryMs: opts.retryMs } : {}),
    ...(opts.maxRetryMs !== undefined ? { maxRetryMs: opts.maxRetryMs } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  });
}
