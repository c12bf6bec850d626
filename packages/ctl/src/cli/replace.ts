/**
 * `calicoctl replace -f F`: its usage and run (the work: commands/write.ts).
 */
import { leaf } from './command.js';
import type { ConnectionFlags } from './session.js';
import { connectionOptions, DATASTORE_INTRO, fileOptions, KINDS_HELP } from './shared.js';

export const replace = leaf<[], ConnectionFlags & { filename: string }>({
  name: 'replace',
  usage: {
    description: 'Replace existing resources by file, directory or stdin.',
    options: [...fileOptions({ required: true }), ...connectionOptions({ namespace: true })],
    after: `\n${DATASTORE_INTRO}A resource that does not exist is an error.${KINDS_HELP}`,
  },
  run: ({ opts }, session) =>
    session.withDatastore(opts, async (ds) => {
      const { replaceCommand } = await import('../commands/write.js');
      return replaceCommand(opts, ds, session.ctx());
    }),
});
