/**
 * `calicoctl version [--poll D]`: its usage and run (the work: commands/version.ts). It connects
 * only to read the cluster's version, and never checks it against its own.
 */
import { leaf } from './command.js';
import type { Connection } from './deps.js';
import type { ConnectionFlags } from './session.js';
import { connectionOptions } from './shared.js';

export const version = leaf<[], ConnectionFlags & { poll?: string }>({
  name: 'version',
  usage: {
    description: 'Display the client and cluster versions.',
    options: [
      ...connectionOptions(),
      { flags: '--poll <POLL>', description: 'poll the cluster information every POLL (e.g. 1s, 10m)' },
    ],
  },
  run: async ({ opts }, session) => {
    const { versionCommand } = await import('../commands/version.js');
    let conn: Connection | undefined;
    try {
      return await versionCommand(
        { poll: opts.poll },
        async () => {
          conn = await session.connect(opts);
          return conn.datastore;
        },
        session.ctx(),
      );
    } finally {
      await conn?.close().catch(() => {});
    }
  },
});
