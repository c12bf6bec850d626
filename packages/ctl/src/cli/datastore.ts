/**
 * `calicoctl datastore migrate export|import|lock|unlock`: their usage and runs (the work:
 * commands/datastore.ts, and commands/import-kdd.ts for an import into Kubernetes). Import is the
 * one datastore command that does not check the cluster version: the target has none yet.
 */
import { type GroupCommand, leaf } from './command.js';
import type { ConnectionFlags } from './session.js';
import { connectionOptions } from './shared.js';

const migrate: GroupCommand = {
  name: 'migrate',
  usage: { description: 'Migrate the contents of an etcdv3 datastore.' },
  subcommands: [
    leaf<[], ConnectionFlags>({
      name: 'export',
      usage: {
        description: 'Export the whole datastore (lock it first) to stdout.',
        options: connectionOptions(),
      },
      run: ({ opts }, session) =>
        session.withDatastore(opts, async (ds, conn) => {
          const { exportCommand } = await import('../commands/datastore.js');
          return exportCommand({ datastore: ds, kv: conn.kv }, session.ctx());
        }),
    }),
    leaf<[], ConnectionFlags & { filename: string }>({
      name: 'import',
      usage: {
        description:
          'Import an export into a datastore without Calico data: another etcd, or a Kubernetes cluster with the Calico CRDs.',
        options: [
          {
            flags: '-f, --filename <FILENAME>',
            description: 'the export file, or - for stdin',
            required: true,
          },
          ...connectionOptions(),
        ],
      },
      run: ({ opts }, session) =>
        session.withDatastore(
          opts,
          async (ds, conn) => {
            const { importCommand } = await import('../commands/datastore.js');
            return importCommand({ filename: opts.filename }, { datastore: ds, kv: conn.kv }, session.ctx());
          },
          { check: false },
        ),
    }),
    leaf<[], ConnectionFlags>({
      name: 'lock',
      usage: {
        description: 'Lock the datastore (datastoreReady: false) for migration.',
        options: connectionOptions(),
      },
      run: ({ opts }, session) =>
        session.withDatastore(opts, async (ds) => {
          const { lockCommand } = await import('../commands/datastore.js');
          return lockCommand(ds, session.ctx());
        }),
    }),
    leaf<[], ConnectionFlags>({
      name: 'unlock',
      usage: { description: 'Unlock the datastore (datastoreReady: true).', options: connectionOptions() },
      run: ({ opts }, session) =>
        session.withDatastore(opts, async (ds) => {
          const { unlockCommand } = await import('../commands/datastore.js');
          return unlockCommand(ds, session.ctx());
        }),
    }),
  ],
};

export const datastore: GroupCommand = {
  name: 'datastore',
  usage: { description: 'Calico datastore management.' },
  subcommands: [migrate],
};
