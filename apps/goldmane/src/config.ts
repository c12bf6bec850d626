/**
 * Goldmane's configuration from the environment, with upstream's variable names and defaults
 * (`goldmane/pkg/daemon`: PORT, SERVER_CERT_PATH, SERVER_KEY_PATH, CA_CERT_PATH,
 * AGGREGATION_WINDOW, HEALTH_ENABLED, HEALTH_PORT, PROMETHEUS_PORT, LOG_LEVEL) and ours (HOST,
 * RETENTION, MAX_FLOWS, PROMETHEUS_HOST, INSECURE_PLAINTEXT). Pure: env in, config or an error
 * naming the variable out.
 *
 * Upstream serves plaintext when the certificate paths are unset; we refuse to start instead. The
 * only plaintext is INSECURE_PLAINTEXT=true on a loopback HOST, for tests.
 */
import { GoldmaneError } from './errors.js';

/** The settings. Durations in seconds. */
export interface GoldmaneConfig {
  /** pino level. */
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** gRPC address. */
  readonly host: string;
  /** gRPC port (upstream 443). */
  readonly port: number;
  /** mTLS files; all empty only with `plaintext`. */
  readonly serverCertPath: string;
  /** Server key. */
  readonly serverKeyPath: string;
  /** CA of the client certificates. */
  readonly caCertPath: string;
  /** No TLS (loopback only). */
  readonly plaintext: boolean;
  /** Bucket width (upstream 15 s). */
  readonly aggregationWindowSeconds: number;
  /** History kept (1 h: upstream's 240 buckets of 15 s). */
  readonly retentionSeconds: number;
  /** Flow budget: flow key × bucket rows. */
  readonly maxFlows: number;
  /** /liveness and /readiness on localhost:healthPort. */
  readonly healthEnabled: boolean;
  /** Health port (upstream 8080). */
  readonly healthPort: number;
  /** /metrics port; 0 = off (upstream's default). */
  readonly prometheusPort: number;
  /** /metrics address; empty = every address. */
  readonly prometheusHost: string;
}

type Env = Readonly<Record<string, string | undefined>>;

function get(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function bad(name: string, raw: string, what: string): GoldmaneError {
  return new GoldmaneError('config', `${name}: ${JSON.stringify(raw)} is not ${what}`);
}

function int(env: Env, name: string, dflt: number, min: number, max: number): number {
  const raw = get(env, name);
  if (raw === undefined) return dflt;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max) throw bad(name, raw, `an integer in ${min}–${max}`);
  return n;
}

function bool(env: Env, name: string, dflt: boolean): boolean {
  const raw = get(env, name);
  if (raw === undefined) return dflt;
  const v = raw.toLowerCase();
  if (['true', '1', 't', 'yes'].includes(v)) return true;
  if (['false', '0', 'f', 'no'].includes(v)) return false;
  throw bad(name, raw, 'a boolean');
}

const UNIT_SECONDS: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };

/** A Go duration (`15s`, `1h30m`) in whole seconds. */
function duration(env: Env, name: string, dflt: number): number {
  const raw = get(env, name);
  if (raw === undefined) return dflt;
  const parts = [...raw.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== raw)
    throw bad(name, raw, 'a duration (15s, 1h)');
  const s = parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_SECONDS[p[2]!]!, 0);
  if (!Number.isInteger(s) || s < 1) throw bad(name, raw, 'a whole number of seconds, at least 1s');
  return s;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** The configuration the environment gives; throws a config error naming the variable. */
export function goldmaneConfigFromEnv(env: Env): GoldmaneConfig {
  const level = (get(env, 'LOG_LEVEL') ?? 'info').toLowerCase();
  const logLevel = level === 'warning' ? 'warn' : level;
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel))
    throw bad('LOG_LEVEL', level, 'debug, info, warn or error');
  const window = duration(env, 'AGGREGATION_WINDOW', 15);
  const retention = duration(env, 'RETENTION', window * 240);
  if (retention % window !== 0) {
    throw new GoldmaneError(
      'config',
      `RETENTION: ${retention}s is not a multiple of AGGREGATION_WINDOW (${window}s)`,
    );
  }
  const cfg: GoldmaneConfig = {
    logLevel: logLevel as GoldmaneConfig['logLevel'],
    host: get(env, 'HOST') ?? '0.0.0.0',
    port: int(env, 'PORT', 443, 0, 65535),
    serverCertPath: get(env, 'SERVER_CERT_PATH') ?? '',
    serverKeyPath: get(env, 'SERVER_KEY_PATH') ?? '',
    caCertPath: get(env, 'CA_CERT_PATH') ?? '',
    plaintext: bool(env, 'INSECURE_PLAINTEXT', false),
    aggregationWindowSeconds: window,
    retentionSeconds: retention,
    maxFlows: int(env, 'MAX_FLOWS', 100_000, 1, 100_000_000),
    healthEnabled: bool(env, 'HEALTH_ENABLED', true),
    healthPort: int(env, 'HEALTH_PORT', 8080, 0, 65535),
    prometheusPort: int(env, 'PROMETHEUS_PORT', 0, 0, 65535),
    prometheusHost: get(env, 'PROMETHEUS_HOST') ?? '',
  };
  const files = [
    ['SERVER_CERT_PATH', cfg.serverCertPath],
    ['SERVER_KEY_PATH', cfg.serverKeyPath],
    ['CA_CERT_PATH', cfg.caCertPath],
  ] as const;
  if (cfg.plaintext) {
    if (!LOOPBACK.has(cfg.host)) {
      throw new GoldmaneError(
        'config',
        `INSECURE_PLAINTEXT: only on a loopback HOST (127.0.0.1, ::1), not ${cfg.host}`,
      );
    }
    const set = files.filter(([, v]) => v !== '').map(([n]) => n);
    if (set.length > 0)
      throw new GoldmaneError('config', `INSECURE_PLAINTEXT: cannot be used with ${set.join(', ')}`);
  } else {
    const missing = files.filter(([, v]) => v === '').map(([n]) => n);
    if (missing.length > 0) {
      throw new GoldmaneError(
        'config',
        `${missing.join(', ')}: required (goldmane serves mTLS only; INSECURE_PLAINTEXT=true on a loopback HOST for tests)`,
      );
    }
  }
  return cfg;
}
