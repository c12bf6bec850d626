/**
 * `calicoctl patch KIND NAME -p PATCH`: its usage and run (the work: commands/patch.ts).
 */
import { leaf } from './command.js';
import type { ConnectionFlags } from './session.js';
import { connectionOptions, KINDS_HELP } from './shared.js';

export const patch = leaf<[string, string], ConnectionFlags & { patch: string; type: string }>({
  name: 'patch',
  usage: {
    description: 'Patch a resource in place.',
    arguments: [{ name: '<KIND>' }, { name: '<NAME>' }],
    options: [
      { flags: '-p, --patch <PATCH>', description: 'the patch, JSON', required: true },
      {
        flags: '-t, --type <TYPE>',
        description: 'strategic (default), merge (RFC 7386) or json (RFC 6902)',
        default: 'strategic',
      },
      ...connectionOptions({ namespace: true }),
    ],
    after: KINDS_HELP,
  },
  run: ({ args: [kind, name], opts }, session) =>
    session.withDatastore(opts, async (ds) => {
      const { patchCommand } = await import('../commands/patch.js');
      return patchCommand(
        { kind, name, patch: opts.patch, type: opts.type, namespace: opts.namespace },
        ds,
        session.ctx(),
      );
    }),
});
