/**
 * `calicoctl delete KIND NAME… | -f F`: its usage and run (the work: commands/write.ts). Deleting
 * a Node or an IPPool releases IPAM state first, so the run hands the IPAM client over when the
 * datastore has raw keys.
 */
import { leaf } from './command.js';
import type { ConnectionFlags } from './session.js';
import { connectionOptions, fileOptions, KINDS_HELP } from './shared.js';

type Flags = ConnectionFlags & { filename?: string; skipNotExists?: boolean };

export const deleteCmd = leaf<[string | undefined, string[]], Flags>({
  name: 'delete',
  usage: {
    description: 'Delete resources by file, directory, stdin, or kind and names.',
    arguments: [{ name: '[KIND]' }, { name: '[NAME...]' }],
    options: [
      ...fileOptions({ required: false }),
      { flags: '-s, --skip-not-exists', description: 'treat resources that do not exist as deleted' },
      ...connectionOptions({ namespace: true }),
    ],
    after: KINDS_HELP,
  },
  run: async ({ args: [kind, names], opts }, session) => {
    session.requireKindOrFile(kind, opts.filename);
    return session.withDatastore(opts, async (ds, conn) => {
      const { deleteCommand } = await import('../commands/write.js');
      const ipam = conn.kv ? (await session.ipamOf(ds, conn)).ipam : undefined;
      const deps = ipam
        ? {
            pools: {
              releasePoolAffinities: (cidr: string) => ipam.releasePoolAffinities(cidr),
              sleep: session.sleep,
            },
            nodeIpam: ipam,
          }
        : {};
      return deleteCommand({ ...opts, kind, names }, ds, session.ctx(), deps);
    });
  },
});
