/**
 * `calicoctl cluster diags`: its usage and run (the work: commands/cluster-diags.ts, with the
 * connection's kubeconfig for kubectl).
 */
import { type GroupCommand, leaf } from './command.js';
import type { ConnectionFlags } from './session.js';
import { connectionOptions } from './shared.js';

const diags = leaf<[], ConnectionFlags & { since?: string; maxLogs: string; focusNodes?: string }>({
  name: 'diags',
  usage: {
    description:
      'Create a diagnostics bundle of the cluster: every Calico resource, the Kubernetes view (kubectl) and the logs of Calico pods.',
    options: [
      { flags: '--since <SINCE>', description: 'only logs newer than this relative duration (10s, 5m, 1h)' },
      {
        flags: '--max-logs <MAXLOGS>',
        description: 'logs of at most this many pods of each Calico component',
        default: '5',
      },
      {
        flags: '--focus-nodes <NODES>',
        description: "comma-separated nodes whose pods' logs are taken first",
      },
      ...connectionOptions(),
    ],
  },
  run: ({ opts }, session) =>
    session.withDatastore(opts, async (ds, conn) => {
      const { clusterDiagsCommand } = await import('../commands/cluster-diags.js');
      return clusterDiagsCommand(opts, { datastore: ds, kubeconfig: conn.kubeconfig }, session.ctx());
    }),
});

export const cluster: GroupCommand = {
  name: 'cluster',
  usage: { description: 'Calico cluster management.' },
  subcommands: [diags],
};
