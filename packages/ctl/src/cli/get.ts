/**
 * `calicoctl get KIND [NAME…] | -f F`: its usage and run (the work: commands/get.ts). A read, so
 * it runs beside the cluster version check.
 */
import { leaf } from './command.js';
import type { ConnectionFlags } from './session.js';
import { connectionOptions, fileOptions, KINDS_HELP } from './shared.js';

type Flags = ConnectionFlags & {
  filename?: string;
  output: string;
  allNamespaces?: boolean;
  export?: boolean;
};

export const get = leaf<[string | undefined, string[]], Flags>({
  name: 'get',
  // Upstream also accepts `-a` for `--all-namespaces` (an older spelling).
  flagAliases: { '-a': '-A' },
  usage: {
    description: 'Display resources by file, directory, stdin, or kind and names.',
    arguments: [{ name: '[KIND]' }, { name: '[NAME...]' }],
    options: [
      ...fileOptions({ required: false }),
      {
        flags: '-o, --output <OUTPUT>',
        description: 'ps, wide, yaml, json, custom-columns=..., go-template=..., go-template-file=...',
        default: 'ps',
      },
      { flags: '-A, --all-namespaces', description: 'list across all namespaces' },
      { flags: '--export', description: 'strip cluster-specific metadata (with names only)' },
      ...connectionOptions({ namespace: true }),
    ],
    after: KINDS_HELP,
  },
  run: async ({ args: [kind, names], opts }, session) => {
    session.requireKindOrFile(kind, opts.filename);
    return session.withDatastore(
      opts,
      async (ds) => {
        const { getCommand } = await import('../commands/get.js');
        return getCommand({ ...opts, kind, names }, ds, session.ctx());
      },
      { readOnly: true },
    );
  },
});
