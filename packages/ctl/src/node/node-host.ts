/**
 * The host facts `node status` reads, behind an interface so the command is tested with a fake:
 * whether we are root, the command lines of running processes, and BIRD's control sockets.
 */
import { readdir, readFile } from 'node:fs/promises';

export interface NodeHost {
  isRoot(): boolean;
  /** argv of every running process. */
  processes(): Promise<string[][]>;
  /** Send `show protocols` to BIRD (`bird.ctl` or `bird6.ctl`); throws if no socket answers. */
  showProtocols(ipv: '4' | '6'): Promise<string>;
}

const BIRD_TIMEOUT_MS = 2000;

/** Where BIRD's sockets are looked for: `CALICO_BIRD_SOCKET_DIRS` (colon list) or upstream's two. */
export function birdSocketDirs(env: Readonly<Record<string, string | undefined>>): string[] {
  const v = env.CALICO_BIRD_SOCKET_DIRS;
  return v ? v.split(':').filter(Boolean) : ['/var/run/calico', '/var/run/bird'];
}

function query(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    // node:net loaded here, when node status runs, not by every calicoctl command.
    const sock = process.getBuiltinModule('node:net').createConnection(path);
    let buf = '';
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        sock.destroy();
        reject(new Error(`timed out reading from ${path}`));
      }, BIRD_TIMEOUT_MS);
    };
    sock.setEncoding('utf8');
    sock.on('connect', () => {
      arm();
      sock.write('show protocols\n');
    });
    sock.on('data', (d: string) => {
      buf += d;
      arm();
      const afterReady = buf.slice(buf.indexOf('\n') + 1);
      if (/(^|\n)0000/.test(afterReady)) {
        clearTimeout(timer);
        sock.end();
        resolve(buf);
      }
    });
    sock.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

export function systemNodeHost(env: Readonly<Record<string, string | undefined>>): NodeHost {
  return {
    isRoot: () => process.getuid?.() === 0,
    async processes() {
      const out: string[][] = [];
      for (const pid of await readdir('/proc')) {
        if (!/^\d+$/.test(pid)) continue;
        try {
          const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
          if (argv[argv.length - 1] === '') argv.pop();
          if (argv.length > 0) out.push(argv);
        } catch {
          // gone since readdir
        }
      }
      return out;
    },
    async showProtocols(ipv) {
      let last: unknown;
      for (const dir of birdSocketDirs(env)) {
        try {
          return await query(`${dir}/bird${ipv === '6' ? '6' : ''}.ctl`);
        } catch (e) {
          last = e;
        }
      }
      throw last ?? new Error('no BIRD socket directory');
    },
  };
}
