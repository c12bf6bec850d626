/**
 * Plain-text logs on stderr (and, with `log_file_path`, appended to that file), in upstream's
 * layout: `2024-05-01 10:00:00.123 [INFO][4242] calico <message> key=value …`. No library: the
 * plugin is exec'd per pod and must start fast.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeStderr } from '@calico-ts/api/stdio';
import type { LogLevel } from '../spec/netconf.js';

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** Adds fields to every line from now on (e.g. ContainerID). */
  with(fields: LogFields): Logger;
  setLevel(level: LogLevel): void;
  setFile(path: string | undefined): void;
}

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warning: 2, error: 3 };

interface Sink {
  level: LogLevel;
  /** The PID each line names: this process's, or the plugin process a service runs on behalf of. */
  pid: number;
  file?: string;
  write: (line: string) => void;
}

export function createLogger(
  component: string,
  write: (line: string) => void = writeStderr,
  pid: number = process.pid,
): Logger {
  const sink: Sink = { level: 'info', write, pid };
  return makeLogger(component, sink, {});
}

function makeLogger(component: string, sink: Sink, base: LogFields): Logger {
  const emit = (level: LogLevel, tag: string, msg: string, fields?: LogFields) => {
    if (RANK[level] < RANK[sink.level]) return;
    const all = { ...base, ...fields };
    const kv = Object.entries(all)
      .filter(([, v]) => v !== undefined)
      .map(
        ([k, v]) =>
          `${k}=${typeof v === 'string' ? (/\s/.test(v) ? JSON.stringify(v) : v) : JSON.stringify(v)}`,
      )
      .join(' ');
    const line = `${timestamp()} [${tag}][${sink.pid}] ${component} ${msg}${kv ? ` ${kv}` : ''}\n`;
    sink.write(line);
    if (sink.file) {
      try {
        appendFileSync(sink.file, line);
      } catch {
        // A log file we cannot write must not fail the operation.
      }
    }
  };
  return {
    debug: (m, f) => emit('debug', 'DEBUG', m, f),
    info: (m, f) => emit('info', 'INFO', m, f),
    warn: (m, f) => emit('warning', 'WARNING', m, f),
    error: (m, f) => emit('error', 'ERROR', m, f),
    with: (fields) => makeLogger(component, sink, { ...base, ...fields }),
    setLevel: (level) => {
      sink.level = level;
    },
    setFile: (path) => {
      if (path === undefined) {
        delete sink.file;
        return;
      }
      try {
        mkdirSync(dirname(path), { recursive: true });
        sink.file = path;
      } catch {
        delete sink.file;
      }
    },
  };
}

function timestamp(): string {
  const d = new Date();
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

/** A logger that drops everything (tests). */
export function silentLogger(): Logger {
  return createLogger('test', () => {});
}
