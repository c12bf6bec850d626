/**
 * calico-apiserver: the program. Reads the command line (flags.ts) and the environment, starts the
 * server (server.ts) and serves until SIGTERM or SIGINT, then ends every connection and closes
 * the datastore. Exit status: 0 after a signal, 1 when it cannot start, 2 for a bad command line.
 */

import { parseArgs, USAGE } from './flags.js';
import { jsonLogger } from './log.js';
import { startApiServer, VERSION } from './server.js';

type Env = Readonly<Record<string, string | undefined>>;

export async function main(argv: readonly string[], env: Env): Promise<number> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs(argv);
  } catch (e) {
    process.stderr.write(`calico-apiserver: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (parsed.kind === 'version') {
    process.stdout.write(`calico-apiserver ${VERSION} (calico-ts)\n`);
    return 0;
  }
  if (parsed.kind === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  let log: ReturnType<typeof jsonLogger>;
  try {
    log = jsonLogger(env.LOG_LEVEL);
  } catch (e) {
    process.stderr.write(`calico-apiserver: ${(e as Error).message}\n`);
    return 2;
  }
  const { flags } = parsed;
  try {
    const server = await startApiServer({ ...flags, env: env as Record<string, string | undefined>, log });
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
    });
    log.info('calico-apiserver stopping');
    await server.close();
    return 0;
  } catch (e) {
    log.error({ err: (e as Error).message }, 'calico-apiserver cannot run');
    return 1;
  }
}
