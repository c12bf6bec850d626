/**
 * `calicoctl create -f F`: its usage and run (the work: commands/write.ts).
 */
import { leaf } from './command.js';
import type { ConnectionFlags } from './session.js';
import { connectionOptions, DATASTORE_INTRO, fileOptions, KINDS_HELP } from './shared.js';

type Flags = ConnectionFlags & {
  filename: string;
  recursive?: boolean;
  skipEmpty?: boolean;
  skipExists?: boolean;
};

export const create = leaf<[], Flags>({
  name: 'create',
  usage: {
    description: 'Create resources by file, directory or stdin.',
    options: [
      ...fileOptions({ required: true }),
      { flags: '--skip-exists', description: 'treat resources that already exist as created' },
      ...connectionOptions({ namespace: true }),
    ],
    after: `\n${DATASTORE_INTRO}Every document is validated before any is written.${KINDS_HELP}`,
  },
  run: ({ opts }, session) =>
    session.withDatastore(opts, async (ds) => {
      const { createCommand } = await import('../commands/write.js');
      return createCommand(opts, ds, session.ctx());
    }),
});
