/**
 * Between the wire and the store: the messages as the gRPC decoder gives them (proto field names,
 * enum values by name, int64 as numbers, absent fields at their defaults) checked and turned into
 * the store's types, and back. A bad field is an invalid-argument error naming its path in the
 * request (`filter.dest_ports[1].port`). Pure.
 */
import { invalidArgument } from './errors.js';
import type { Filter, PolicyMatch, StringMatch } from './filter.js';
import {
  ACTIONS,
  ENDPOINT_TYPES,
  FILTER_TYPES,
  type Flow,
  type FlowKey,
  type FlowResult,
  MATCH_TYPES,
  POLICY_KINDS,
  type PolicyHit,
  REPORTERS,
  SORT_BYS,
} from './flow.js';
import type { HintsQuery, ListQuery } from './store.js';

/** A decoded message: field name → value. */
export type Wire = Record<string, unknown>;

/** A stream request, decoded. */
export interface StreamQuery {
  /** 0 = from now; > 0 absolute; < 0 relative to now. */
  readonly startTimeGte: number;
  /** Criteria. */
  readonly filter: Filter;
  /** 0 or the server's interval. */
  readonly aggregationInterval: number;
}

function msg(v: unknown, path: string): Wire | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidArgument(path, 'is not a message');
  return v as Wire;
}

function int(v: unknown, path: string, min = Number.MIN_SAFE_INTEGER): number {
  const n = v === undefined || v === null ? 0 : typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n))
    throw invalidArgument(path, `${String(v)} is not an integer`);
  if (n < min) throw invalidArgument(path, `${n} is below ${min}`);
  return n;
}

function str(v: unknown, path: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw invalidArgument(path, 'is not a string');
  return v;
}

function oneOf<T extends string>(v: unknown, values: readonly T[], path: string): T {
  if (v === undefined || v === null) return values[0]!;
  if (typeof v === 'string' && (values as readonly string[]).includes(v)) return v as T;
  throw invalidArgument(path, `${JSON.stringify(v)} is not one of ${values.join(', ')}`);
}

function list(v: unknown, path: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw invalidArgument(path, 'is not a list');
  return v;
}

function decodeHit(w: Wire, path: string, depth = 0): PolicyHit {
  const trigger = msg(w.trigger, `${path}.trigger`);
  if (trigger && depth > 0) throw invalidArgument(`${path}.trigger`, 'a trigger cannot have a trigger');
  return {
    kind: oneOf(w.kind, POLICY_KINDS, `${path}.kind`),
    namespace: str(w.namespace, `${path}.namespace`),
    name: str(w.name, `${path}.name`),
    tier: str(w.tier, `${path}.tier`),
    action: oneOf(w.action, ACTIONS, `${path}.action`),
    policyIndex: int(w.policy_index, `${path}.policy_index`, 0),
    ruleIndex: int(w.rule_index, `${path}.rule_index`, -1),
    trigger: trigger ? decodeHit(trigger, `${path}.trigger`, depth + 1) : null,
  };
}

function decodeHits(v: unknown, path: string): PolicyHit[] {
  return list(v, path).map((h, i) => decodeHit(msg(h, `${path}[${i}]`) ?? {}, `${path}[${i}]`));
}

function decodeKey(w: Wire, path: string): FlowKey {
  const port = (v: unknown, p: string) => {
    const n = int(v, p, 0);
    if (n > 65535) throw invalidArgument(p, `${n} is not a port (0–65535)`);
    return n;
  };
  const policies = msg(w.policies, `${path}.policies`) ?? {};
  return {
    sourceName: str(w.source_name, `${path}.source_name`),
    sourceNamespace: str(w.source_namespace, `${path}.source_namespace`),
    sourceType: oneOf(w.source_type, ENDPOINT_TYPES, `${path}.source_type`),
    destName: str(w.dest_name, `${path}.dest_name`),
    destNamespace: str(w.dest_namespace, `${path}.dest_namespace`),
    destType: oneOf(w.dest_type, ENDPOINT_TYPES, `${path}.dest_type`),
    destPort: port(w.dest_port, `${path}.dest_port`),
    destServiceName: str(w.dest_service_name, `${path}.dest_service_name`),
    destServiceNamespace: str(w.dest_service_namespace, `${path}.dest_service_namespace`),
    destServicePortName: str(w.dest_service_port_name, `${path}.dest_service_port_name`),
    destServicePort: port(w.dest_service_port, `${path}.dest_service_port`),
    proto: str(w.proto, `${path}.proto`),
    reporter: oneOf(w.reporter, REPORTERS, `${path}.reporter`),
    action: oneOf(w.action, ACTIONS, `${path}.action`),
    policies: {
      enforcedPolicies: decodeHits(policies.enforced_policies, `${path}.policies.enforced_policies`),
      pendingPolicies: decodeHits(policies.pending_policies, `${path}.policies.pending_policies`),
    },
  };
}

/** A FlowUpdate's flow; throws invalid-argument naming the field (`flow.Key.dest_port`). */
export function decodeFlowUpdate(update: Wire): Flow {
  const w = msg(update.flow, 'flow');
  if (!w) throw invalidArgument('flow', 'is required');
  const keyWire = msg(w.Key, 'flow.Key');
  if (!keyWire) throw invalidArgument('flow.Key', 'is required');
  const startTime = int(w.start_time, 'flow.start_time', 0);
  const endTime = int(w.end_time, 'flow.end_time', 0);
  if (startTime === 0) throw invalidArgument('flow.start_time', 'is required (seconds since the epoch)');
  if (endTime <= startTime)
    throw invalidArgument('flow.end_time', `${endTime} is not after start_time (${startTime})`);
  const labels = (v: unknown, p: string) => list(v, p).map((l, i) => str(l, `${p}[${i}]`));
  return {
    key: decodeKey(keyWire, 'flow.Key'),
    startTime,
    endTime,
    sourceLabels: labels(w.source_labels, 'flow.source_labels'),
    destLabels: labels(w.dest_labels, 'flow.dest_labels'),
    packetsIn: int(w.packets_in, 'flow.packets_in', 0),
    packetsOut: int(w.packets_out, 'flow.packets_out', 0),
    bytesIn: int(w.bytes_in, 'flow.bytes_in', 0),
    bytesOut: int(w.bytes_out, 'flow.bytes_out', 0),
    numConnectionsStarted: int(w.num_connections_started, 'flow.num_connections_started', 0),
    numConnectionsCompleted: int(w.num_connections_completed, 'flow.num_connections_completed', 0),
    numConnectionsLive: int(w.num_connections_live, 'flow.num_connections_live', 0),
  };
}

function decodeStringMatches(v: unknown, path: string): StringMatch[] {
  return list(v, path).map((m, i) => {
    const w = msg(m, `${path}[${i}]`) ?? {};
    return {
      value: str(w.value, `${path}[${i}].value`),
      type: oneOf(w.type, MATCH_TYPES, `${path}[${i}].type`),
    };
  });
}

/** A Filter; absent = match all. */
export function decodeFilter(v: unknown, path = 'filter'): Filter {
  const w = msg(v, path) ?? {};
  return {
    sourceNames: decodeStringMatches(w.source_names, `${path}.source_names`),
    sourceNamespaces: decodeStringMatches(w.source_namespaces, `${path}.source_namespaces`),
    destNames: decodeStringMatches(w.dest_names, `${path}.dest_names`),
    destNamespaces: decodeStringMatches(w.dest_namespaces, `${path}.dest_namespaces`),
    protocols: decodeStringMatches(w.protocols, `${path}.protocols`),
    destPorts: list(w.dest_ports, `${path}.dest_ports`).map((m, i) => {
      const p = `${path}.dest_ports[${i}].port`;
      const n = int(msg(m, `${path}.dest_ports[${i}]`)?.port, p, 0);
      if (n > 65535) throw invalidArgument(p, `${n} is not a port (0–65535)`);
      return n;
    }),
    actions: list(w.actions, `${path}.actions`).map((a, i) => oneOf(a, ACTIONS, `${path}.actions[${i}]`)),
    policies: list(w.policies, `${path}.policies`).map((m, i): PolicyMatch => {
      const p = `${path}.policies[${i}]`;
      const pm = msg(m, p) ?? {};
      return {
        kind: oneOf(pm.kind, POLICY_KINDS, `${p}.kind`),
        tier: str(pm.tier, `${p}.tier`),
        namespace: str(pm.namespace, `${p}.namespace`),
        name: str(pm.name, `${p}.name`),
        action: oneOf(pm.action, ACTIONS, `${p}.action`),
      };
    }),
  };
}

/** A FlowListRequest. */
export function decodeListRequest(w: Wire): ListQuery {
  return {
    startTimeGte: int(w.start_time_gte, 'start_time_gte'),
    startTimeLt: int(w.start_time_lt, 'start_time_lt'),
    page: int(w.page, 'page', 0),
    pageSize: int(w.page_size, 'page_size', 0),
    sortBy: list(w.sort_by, 'sort_by').map((s, i) =>
      oneOf(msg(s, `sort_by[${i}]`)?.sort_by, SORT_BYS, `sort_by[${i}].sort_by`),
    ),
    filter: decodeFilter(w.filter),
    aggregationInterval: int(w.aggregation_interval, 'aggregation_interval', 0),
  };
}

/** A FlowStreamRequest; the interval must be 0 or `intervalSeconds`. */
export function decodeStreamRequest(w: Wire, intervalSeconds: number): StreamQuery {
  const aggregationInterval = int(w.aggregation_interval, 'aggregation_interval', 0);
  if (aggregationInterval !== 0 && aggregationInterval !== intervalSeconds) {
    throw invalidArgument(
      'aggregation_interval',
      `${aggregationInterval} is not the aggregation window (${intervalSeconds} s); streams send one window at a time`,
    );
  }
  return {
    startTimeGte: int(w.start_time_gte, 'start_time_gte'),
    filter: decodeFilter(w.filter),
    aggregationInterval,
  };
}

/** A FilterHintsRequest. */
export function decodeHintsRequest(w: Wire): HintsQuery {
  return {
    type: oneOf(w.type, FILTER_TYPES, 'type'),
    filter: decodeFilter(w.filter),
    startTimeGte: int(w.start_time_gte, 'start_time_gte'),
    startTimeLt: int(w.start_time_lt, 'start_time_lt'),
    page: int(w.page, 'page', 0),
    pageSize: int(w.page_size, 'page_size', 0),
  };
}

function encodeHit(h: PolicyHit): Wire {
  return {
    kind: h.kind,
    namespace: h.namespace,
    name: h.name,
    tier: h.tier,
    action: h.action,
    policy_index: h.policyIndex,
    rule_index: h.ruleIndex,
    ...(h.trigger ? { trigger: encodeHit(h.trigger) } : {}),
  };
}

/** A Flow as the wire encoder takes it. */
export function encodeFlow(f: Flow): Wire {
  const k = f.key;
  return {
    Key: {
      source_name: k.sourceName,
      source_namespace: k.sourceNamespace,
      source_type: k.sourceType,
      dest_name: k.destName,
      dest_namespace: k.destNamespace,
      dest_type: k.destType,
      dest_port: k.destPort,
      dest_service_name: k.destServiceName,
      dest_service_namespace: k.destServiceNamespace,
      dest_service_port_name: k.destServicePortName,
      dest_service_port: k.destServicePort,
      proto: k.proto,
      reporter: k.reporter,
      action: k.action,
      policies: {
        enforced_policies: k.policies.enforcedPolicies.map(encodeHit),
        pending_policies: k.policies.pendingPolicies.map(encodeHit),
      },
    },
    start_time: f.startTime,
    end_time: f.endTime,
    source_labels: [...f.sourceLabels],
    dest_labels: [...f.destLabels],
    packets_in: f.packetsIn,
    packets_out: f.packetsOut,
    bytes_in: f.bytesIn,
    bytes_out: f.bytesOut,
    num_connections_started: f.numConnectionsStarted,
    num_connections_completed: f.numConnectionsCompleted,
    num_connections_live: f.numConnectionsLive,
  };
}

/** A FlowResult as the wire encoder takes it. */
export function encodeFlowResult(r: FlowResult): Wire {
  return { id: r.id, flow: encodeFlow(r.flow) };
}
