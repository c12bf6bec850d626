/**
 * Felix's configuration from its sources, with upstream's precedence (`felix/config/
 * config_params.go` UpdateFrom/resolve): environment `FELIX_<PARAM>` (name matched without regard
 * to case) > config file > FelixConfiguration `node.<hostname>` > FelixConfiguration `default` >
 * built-in default. Local parameters (DatastoreType, Etcd*, FelixHostname, …) are taken from env
 * and the file only. A value that does not parse is reported and ignored, so the next source down
 * decides (upstream logs and does the same).
 *
 * Pure: every input is data; `loadFelixConfig` in load-config.ts does the reading.
 */
import type { FelixConfigurationSpec } from '@calico-ts/api';
import { type FelixConfig, PARAMS, PARAMS_BY_LOWER_NAME, type ParamDef, type ParamKind } from './params.js';
import {
  parseAuthority,
  parseBool,
  parseEndpointList,
  parseGoDuration,
  parseHostAddress,
  parseHostname,
  parseIfaceList,
  parseIfaceName,
  parseInt10,
  parseIPv4,
  parseIPv4NetList,
  parseMarkMask,
  parseOneOf,
  parsePortList,
  parsePortRange,
  parseRegexp,
} from './values.js';

export type ConfigSource = 'env' | 'file' | 'datastore-per-host' | 'datastore-global' | 'default';

export interface ConfigSources {
  /** The process environment (only `FELIX_*` names are read). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The config file's `key = value` pairs (any section). */
  readonly file?: Readonly<Record<string, string>>;
  /** The spec of FelixConfiguration `node.<hostname>`. */
  readonly perHost?: FelixConfigurationSpec;
  /** The spec of FelixConfiguration `default`. */
  readonly global?: FelixConfigurationSpec;
  /** What the built-in default of FelixHostname is (the machine's host name). */
  readonly hostname?: string;
}

export interface ConfigProblem {
  readonly param: string;
  readonly source: ConfigSource;
  readonly message: string;
}

export interface ResolvedConfig {
  readonly config: FelixConfig;
  /** Where each parameter's value came from. */
  readonly sources: Readonly<Record<keyof FelixConfig, ConfigSource>>;
  /** Values that were ignored because they did not parse, or came from a source not allowed. */
  readonly problems: readonly ConfigProblem[];
}

/** Parses a raw value for a parameter; throws a RangeError saying what is wrong. */
export function parseParam(kind: ParamKind, raw: string): unknown {
  switch (kind.t) {
    case 'bool':
      return parseBool(raw);
    case 'optbool':
      return raw.trim() === '' ? undefined : parseBool(raw);
    case 'int':
      return parseInt10(raw, kind.min, kind.max);
    case 'seconds': {
      const v = raw.trim();
      const n = /^\d+(\.\d+)?$/.test(v) ? Number(v) : parseGoDuration(v);
      if (n < 0) throw new RangeError(`"${raw}" is negative`);
      return n;
    }
    case 'string':
      return raw;
    case 'oneof':
      return parseOneOf(raw, kind.options);
    case 'ports':
      return parsePortList(raw);
    case 'ifaces':
      return parseIfaceList(raw);
    case 'endpoints':
      return parseEndpointList(raw);
    case 'mark':
      return parseMarkMask(raw);
    case 'ipv4':
      return parseIPv4(raw);
    case 'portrange':
      return parsePortRange(raw);
    case 'iface':
      return parseIfaceName(raw);
    case 'ipv4nets':
      return parseIPv4NetList(raw);
    case 'regexp':
      return parseRegexp(raw);
    case 'authority':
      return parseAuthority(raw);
    case 'hostname':
      return parseHostname(raw);
    case 'hostaddr':
      return parseHostAddress(raw);
  }
}

/** A FelixConfiguration field's value as the raw text the parsers read (upstream's v1 form). */
export function apiValueToRaw(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (Array.isArray(value)) {
    return value
      .map((v) => {
        if (typeof v !== 'object' || v === null) return String(v);
        const p = v as { protocol?: string; port: number; net?: string };
        const proto = (p.protocol ?? 'tcp').toLowerCase();
        return p.net ? `${proto}:${p.net}:${p.port}` : `${proto}:${p.port}`;
      })
      .join(',');
  }
  return String(value);
}

/** The raw values a FelixConfiguration spec sets, by parameter. */
function rawFromSpec(spec: FelixConfigurationSpec | undefined): Map<ParamDef, string> {
  const out = new Map<ParamDef, string>();
  if (!spec) return out;
  const s = spec as Record<string, unknown>;
  for (const p of PARAMS) {
    if (p.field === undefined || s[p.field] === undefined) continue;
    out.set(p, apiValueToRaw(s[p.field]));
  }
  return out;
}

function rawFromNamed(
  entries: Iterable<[string, string | undefined]>,
  source: 'env' | 'file',
  problems: ConfigProblem[],
): Map<ParamDef, string> {
  const out = new Map<ParamDef, string>();
  for (const [k, v] of entries) {
    if (v === undefined) continue;
    const p = PARAMS_BY_LOWER_NAME.get(k.toLowerCase());
    if (p) out.set(p, v);
    else if (source === 'file') problems.push({ param: k, source, message: 'unknown parameter, ignored' });
  }
  return out;
}

function envEntries(env: Readonly<Record<string, string | undefined>>): [string, string | undefined][] {
  const out: [string, string | undefined][] = [];
  for (const [k, v] of Object.entries(env)) {
    if (k.length > 6 && k.slice(0, 6).toUpperCase() === 'FELIX_') out.push([k.slice(6), v]);
  }
  return out;
}

export function resolveFelixConfig(src: ConfigSources): ResolvedConfig {
  const problems: ConfigProblem[] = [];
  const layers: [ConfigSource, Map<ParamDef, string>][] = [
    ['env', rawFromNamed(envEntries(src.env ?? {}), 'env', problems)],
    ['file', rawFromNamed(Object.entries(src.file ?? {}), 'file', problems)],
    ['datastore-per-host', rawFromSpec(src.perHost)],
    ['datastore-global', rawFromSpec(src.global)],
  ];
  const config: Record<string, unknown> = {};
  const sources: Record<string, ConfigSource> = {};
  for (const p of PARAMS) {
    let chosen: { value: unknown; source: ConfigSource } | undefined;
    for (const [source, values] of layers) {
      const raw = values.get(p);
      if (raw === undefined) continue;
      if (p.local && (source === 'datastore-per-host' || source === 'datastore-global')) {
        problems.push({
          param: p.name,
          source,
          message: 'may only be set in the environment or config file',
        });
        continue;
      }
      if (p.nonZero && raw.trim() === '') continue;
      try {
        chosen = { value: parseParam(p.kind, raw), source };
        break;
      } catch (e) {
        problems.push({ param: p.name, source, message: `ignored: ${(e as Error).message}` });
      }
    }
    if (!chosen) {
      const raw = p.name === 'FelixHostname' ? (src.hostname ?? '') : p.default;
      chosen = {
        value: raw === '' && p.kind.t !== 'string' ? emptyValue(p.kind) : parseParam(p.kind, raw),
        source: 'default',
      };
    }
    config[p.name] = chosen.value;
    sources[p.name] = chosen.source;
  }
  return {
    config: config as unknown as FelixConfig,
    sources: sources as Record<keyof FelixConfig, ConfigSource>,
    problems,
  };
}

function emptyValue(kind: ParamKind): unknown {
  switch (kind.t) {
    case 'endpoints':
    case 'ports':
    case 'ipv4nets':
      return [];
    case 'optbool':
    case 'portrange':
      return undefined;
    default:
      return '';
  }
}

/** Parameter names whose values differ between two configurations. */
export function changedParams(a: FelixConfig, b: FelixConfig): string[] {
  const out: string[] = [];
  for (const p of PARAMS) {
    const x = a[p.name];
    const y = b[p.name];
    const same =
      x instanceof RegExp && y instanceof RegExp
        ? x.source === y.source
        : JSON.stringify(x) === JSON.stringify(y);
    if (!same) out.push(p.name);
  }
  return out;
}
