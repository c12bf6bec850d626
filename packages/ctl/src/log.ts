/**
 * calicoctl's logging: logrus-style lines (`INFO[0000] message`) on stderr, at or above the level
 * set with `-l/--log-level` (default `panic`, i.e. silent).
 */
export const LOG_LEVELS = ['panic', 'fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Logger {
  readonly level: LogLevel;
  error(msg: string): void;
  warn(msg: string): void;
  info(msg: string): void;
  debug(msg: string): void;
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
  const emit = (l: LogLevel, tag: string, msg: string) => {
    if (LOG_LEVELS.indexOf(l) > rank) return;
    const secs = String(Math.floor((now() - start) / 1000)).padStart(4, '0');
    write(`${tag}[${secs}] ${msg}\n`);
  };
  return {
    level,
    error: (m) => emit('error', 'ERRO', m),
    warn: (m) => emit('warn', 'WARN', m),
    info: (m) => emit('info', 'INFO', m),
    debug: (m) => emit('debug', 'DEBU', m),
  };
}

export const silentLogger: Logger = createLogger('panic', () => {});
