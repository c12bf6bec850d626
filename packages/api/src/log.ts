/**
 * The one logger shape every calico-ts package takes: structured fields and a message, at four
 * levels. It is the subset of pino's API the packages call, so a daemon hands its pino logger (or
 * a child of it) straight in; the one-shot programs (the CNI plugin, calicoctl) implement it over
 * their own line formats; tests pass `NOOP_LOGGER` or a recorder.
 *
 *     log.info('BIRD started');
 *     log.warn({ node: 'n2', error: e.message }, 'node has no tunnel address yet');
 *
 * A package never builds another shape: where a caller's logger has a different one, the caller
 * adapts it at its edge.
 */

/** The structured part of a line: any object; its own enumerable properties are the fields. */
export type LogFields = object;

/** One level's function: a message alone, or fields and then a message (pino's order). */
export interface LogFn {
  (msg: string): void;
  (fields: LogFields, msg?: string): void;
}

/** The one logger shape: four levels, each a {@link LogFn}. A pino logger is one as it is. */
export interface Logger {
  /** Something failed and was not done. */
  error: LogFn;
  /** Something is wrong or degraded, and was worked around. */
  warn: LogFn;
  /** What changed: started, programmed, created, released. */
  info: LogFn;
  /** Detail for finding a problem; off by default. */
  debug: LogFn;
}

/** A level's name, as the Logger's members are named. */
export type LogLevelName = keyof Logger;

/** The levels, most severe first. */
export const LOG_LEVEL_NAMES: readonly LogLevelName[] = ['error', 'warn', 'info', 'debug'];

const nothing: LogFn = () => {};

/** Drops every line. */
export const NOOP_LOGGER: Logger = { error: nothing, warn: nothing, info: nothing, debug: nothing };

/** A call's arguments as fields and message, whichever of the two forms it used. */
export function logArgs(a: string | LogFields, b?: string): LogArgs {
  return typeof a === 'string' ? { fields: undefined, msg: a } : { fields: a as FieldMap, msg: b ?? '' };
}

/** One call's arguments, normalised. */
export interface LogArgs {
  /** The fields, when the call gave any. */
  readonly fields: FieldMap | undefined;
  /** The message; empty when the call gave fields alone. */
  readonly msg: string;
}

/** Fields as a writer reads them: name → value. */
export type FieldMap = Readonly<Record<string, unknown>>;

/**
 * A logger that writes every line through `write`, the arguments normalised: what a package's own
 * line format (or a test's recorder) implements.
 */
export function loggerOf(
  write: (level: LogLevelName, msg: string, fields: FieldMap | undefined) => void,
): Logger {
  const at =
    (level: LogLevelName): LogFn =>
    (a: string | LogFields, b?: string) => {
      const { fields, msg } = logArgs(a, b);
      write(level, msg, fields);
    };
  return { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') };
}

/** `log` with `base` added to the fields of every line (a call's own fields win). */
export function withFields(log: Logger, base: LogFields): Logger {
  const at =
    (fn: LogFn): LogFn =>
    (a: string | LogFields, b?: string) => {
      const { fields, msg } = logArgs(a, b);
      fn({ ...base, ...fields }, msg);
    };
  return { error: at(log.error), warn: at(log.warn), info: at(log.info), debug: at(log.debug) };
}
