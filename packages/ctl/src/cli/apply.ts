/**
 * `calicoctl apply -f F`: its usage and run (the work: commands/write.ts).
 */
import { leaf } from './command.js';
import type { ConnectionFlags } from './session.js';
import { connectionOptions, DATASTORE_INTRO, fileOptions, KINDS_HELP } from './shared.js';

export const apply = leaf<[], ConnectionFlags & { filename: string }>({
  name: 'apply',
  usage: {
    description: 'Apply resources by file, directory or stdin: create what is new, replace what exists.',
    options: [...fileOptions({ required: true }), ...connectionOptions({ namespace: true })],
    after: `\n${DATASTORE_INTRO}Give the complete resource: its spec replaces the stored one. Calico v1 documents\n(apiVersion: v1, e.g. kind: ipPool) are converted to projectcalico.org/v3 first.${KINDS_HELP}`,
  },
  run: ({ opts }, session) =>
    session.withDatastore(opts, async (ds) => {
      const { applyCommand } = await import('../commands/write.js');
      return applyCommand(opts, ds, session.ctx());
    }),
});
