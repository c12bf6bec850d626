/**
 * What a command may touch of the outside world, passed in so commands run in tests without a
 * process: output streams, standard input, the environment and the filesystem reads `-f` needs.
 */
export interface CommandIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** The whole of standard input (read once, when `-f -` asks for it). */
  stdin: () => Promise<string>;
  env: Readonly<Record<string, string | undefined>>;
  readFile: (path: string) => Promise<string>;
  /** `'dir'`, `'file'` or `undefined` when nothing is at `path`. */
  statPath: (path: string) => Promise<'dir' | 'file' | undefined>;
  /** Entry names of a directory, unsorted. */
  readDir: (path: string) => Promise<string[]>;
  /** Write a file (`ipam check -o`'s report). */
  writeFile?: (path: string, text: string) => Promise<void>;
}

/** An in-memory CommandIO for tests: collects output, serves files from a map. */
export interface MemoryIO extends CommandIO {
  out: string[];
  err: string[];
  readonly stdoutText: string;
  readonly stderrText: string;
}

export function memoryIO(
  options: { stdin?: string; env?: Record<string, string>; files?: Record<string, string> } = {},
): MemoryIO {
  const out: string[] = [];
  const err: string[] = [];
  const files = options.files ?? {};
  const isDir = (p: string) => {
    const prefix = p.endsWith('/') ? p : `${p}/`;
    return Object.keys(files).some((f) => f.startsWith(prefix));
  };
  return {
    out,
    err,
    get stdoutText() {
      return out.join('');
    },
    get stderrText() {
      return err.join('');
    },
    stdout: (t) => {
      out.push(t);
    },
    stderr: (t) => {
      err.push(t);
    },
    stdin: async () => options.stdin ?? '',
    env: options.env ?? {},
    readFile: async (p) => {
      const text = files[p];
      if (text === undefined) {
        const e = new Error(`ENOENT: no such file or directory, open '${p}'`) as Error & { code: string };
        e.code = isDir(p) ? 'EISDIR' : 'ENOENT';
        throw e;
      }
      return text;
    },
    statPath: async (p) => (files[p] !== undefined ? 'file' : isDir(p) ? 'dir' : undefined),
    writeFile: async (p, text) => {
      files[p] = text;
    },
    readDir: async (p) => {
      const prefix = p.endsWith('/') ? p : `${p}/`;
      const names = new Set<string>();
      for (const f of Object.keys(files)) {
        if (f.startsWith(prefix)) names.add(f.slice(prefix.length).split('/')[0]!);
      }
      return [...names];
    },
  };
}
