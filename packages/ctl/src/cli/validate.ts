/**
 * `calicoctl validate -f F`: its usage and run (the work: commands/validate.ts). Offline: no
 * connection, no version check.
 */
import { leaf } from './command.js';
import { acceptedMismatchFlag, fileOptions, KINDS_HELP } from './shared.js';

export const validate = leaf<[], { filename: string; recursive?: boolean; skipEmpty?: boolean }>({
  name: 'validate',
  usage: {
    description: 'Validate resources by file, directory or stdin, offline.',
    options: [
      ...fileOptions({ required: true }),
      acceptedMismatchFlag('validate never contacts a datastore'),
    ],
    after: KINDS_HELP,
  },
  run: async ({ opts }, session) => {
    const { validateCommand } = await import('../commands/validate.js');
    return validateCommand(opts, session.ctx());
  },
});
