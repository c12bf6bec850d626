/**
 * calicoctl's logging: logrus-style lines (`INFO[0000] message`) on stderr, at or above the level
 * set with `-l/--log-level` (default `panic`, i.e. silent).
 */
import { type LogFields, type Logger, type LogLevelName, loggerOf } from '@calico-ts/api/log';

export const LOG_LEVELS = ['panic', 'fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** calicoctl's parts take the one logger shape of every package. */
export type { Logger } from '@calico-ts/api/log';

const TAG: Record<LogLevelName, string> = { error: 'ERRO', warn: 'WARN', info: 'INFO', debug: 'DEBU' };

/** Fields after the message, logrus-style: `key=value`, values with spaces quoted. */
function fieldsText(fields: LogFields | undefined): string {
  const parts = Object.entries(fields ?? {})
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === 'string' && !/[\s"]/.test(v) ? v : JSON.stringify(v)}`);
  return parts.length > 0 ? ` ${parts.join(' ')}` : '';
}

/** `warning` is accepted for `warn`, as logrus does. */
export function parseLogLevel(text: string): LogLevel | undefined {
  const t = text.toLowerCase();
  if (t === 'warning') return 'warn';
  return (LOG_LEVELS as readonly string[]).includes(t) ? (t as LogLevel) : undefined;
}

export function createLogger(
  level: LogLevel,
  write: (text: string) => void,
  now: () => number = Date.now,
): Logger {
  const start = now();
  const rank = LOG_LEVELS.indexOf(level);
  return loggerOf((l, msg, fields) => {
    if (LOG_LEVELS.indexOf(l) > rank) return;
    const secs = String(Math.floor((now() - start) / 1000)).padStart(4, '0');
    write(`${TAG[l]}[${secs}] ${msg}${fieldsText(fields)}\n`);
  });
}

export const silentLogger: Logger = createLogger('panic', () => {});
