/**
 * `calicoctl label KIND NAME key=value | key --remove`: its usage and run (the work:
 * commands/label.ts).
 */
import { leaf } from './command.js';
import type { ConnectionFlags } from './session.js';
import { connectionOptions } from './shared.js';

export const label = leaf<
  [string, string, string],
  ConnectionFlags & { overwrite?: boolean; remove?: boolean }
>({
  name: 'label',
  usage: {
    description: 'Add, update or remove a label of a resource.',
    arguments: [
      { name: '<KIND>' },
      { name: '<NAME>' },
      { name: '<LABEL>', description: 'key=value, or key with --remove' },
    ],
    options: [
      { flags: '--overwrite', description: 'replace the value of an existing key' },
      { flags: '--remove', description: 'remove the key' },
      ...connectionOptions({ namespace: true }),
    ],
  },
  run: ({ args: [kind, name, labelText], opts }, session) =>
    session.withDatastore(opts, async (ds) => {
      const { labelCommand } = await import('../commands/label.js');
      return labelCommand(
        {
          kind,
          name,
          label: labelText,
          overwrite: opts.overwrite,
          remove: opts.remove,
          namespace: opts.namespace,
        },
        ds,
        session.ctx(),
      );
    }),
});
