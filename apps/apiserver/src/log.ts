/**
 * calico-apiserver's log: JSON lines on stdout at or above LOG_LEVEL (`debug`, `info` (default),
 * `warn`/`warning`, `error`; `fatal` and `panic` log errors only), through the one Logger shape.
 */
import { type Logger, loggerOf } from '@calico-ts/api/log';

const RANK: Readonly<Record<string, number>> = {
  debug: 0,
  info: 1,
  warn: 2,
  warning: 2,
  error: 3,
  fatal: 3,
  panic: 3,
};

/** The level's rank; throws naming the level when it is none of the known ones. */
export function logLevelRank(level: string | undefined): number {
  if (level === undefined || level.trim() === '') return RANK.info!;
  const r = RANK[level.trim().toLowerCase()];
  if (r === undefined) {
    throw new Error(`LOG_LEVEL ${JSON.stringify(level)} is not a level; use debug, info, warn or error`);
  }
  return r;
}

export function jsonLogger(
  level: string | undefined,
  write: (line: string) => void = (l) => process.stdout.write(l),
): Logger {
  const min = logLevelRank(level);
  return loggerOf((l, msg, fields) => {
    if ((RANK[l] ?? 1) < min) return;
    write(`${JSON.stringify({ time: new Date().toISOString(), level: l, msg, ...fields })}\n`);
  });
}
