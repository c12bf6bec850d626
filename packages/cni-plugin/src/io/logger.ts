/**
 * Plain-text logs on stderr (and, with `log_file_path`, appended to that file), in upstream's
 * layout: `2024-05-01 10:00:00.123 [INFO][4242] calico <message> key=value …`. No library: the
 * plugin is exec'd per pod and must start fast.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { type LogFields, type Logger, type LogLevelName, loggerOf } from '@calico-ts/api/log';
import { writeStderr } from '@calico-ts/api/stdio';
import type { LogLevel } from '../spec/netconf.js';

/** The plugin's logger: the shared shape, plus what the network config sets for the process. */
export interface LineLogger extends Logger {
  /** Lines below `level` (the network config's `log_level`) are dropped from now on. */
  setLevel(level: LogLevel): void;
  /** Lines are also appended to `path` (`log_file_path`); undefined: stderr only. */
  setFile(path: string | undefined): void;
}

/** The shared level names to the network config's `log_level` names and their line tags. */
const LEVEL: Record<LogLevelName, { level: LogLevel; tag: string }> = {
  debug: { level: 'debug', tag: 'DEBUG' },
  info: { level: 'info', tag: 'INFO' },
  warn: { level: 'warning', tag: 'WARNING' },
  error: { level: 'error', tag: 'ERROR' },
};

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
): LineLogger {
  const sink: Sink = { level: 'info', write, pid };
  const emit = (name: LogLevelName, msg: string, fields: LogFields | undefined) => {
    const { level, tag } = LEVEL[name];
    if (RANK[level] < RANK[sink.level]) return;
    const kv = Object.entries(fields ?? {})
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
    ...loggerOf(emit),
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
export function silentLogger(): LineLogger {
  return createLogger('test', () => {});
}
