/**
 * `calicoctl node status|checksystem|diags|run`: their usage and runs (the work: commands/node.ts
 * and commands/node-diags.ts, on the host the CLI was given). None of them contacts the datastore.
 */
import { CtlError } from '../errors.js';
import { type GroupCommand, leaf } from './command.js';
import { acceptedMismatchFlag } from './shared.js';

const status = leaf<[], Record<string, never>>({
  name: 'status',
  usage: {
    description: 'Check the Calico node on this host: its agent, and BGP peering states from BIRD.',
    options: [acceptedMismatchFlag('node status never checks versions')],
  },
  run: async (_call, session) => {
    const { nodeHost } = session.deps;
    if (!nodeHost) throw new CtlError('unsupported', 'node status is not available here');
    const { nodeStatusCommand } = await import('../commands/node.js');
    return nodeStatusCommand(nodeHost, session.ctx());
  },
});

const checksystem = leaf<[], { kernelConfig?: string }>({
  name: 'checksystem',
  usage: {
    description: 'Check the compatibility of this host to run a Calico node.',
    options: [
      {
        flags: '-f, --kernel-config <kernel-config>',
        description: 'read the kernel configuration from this file',
      },
      acceptedMismatchFlag('checksystem never checks versions'),
    ],
  },
  run: async ({ opts }, session) => {
    const { systemHost } = session.deps;
    if (!systemHost) throw new CtlError('unsupported', 'node checksystem is not available here');
    const { nodeChecksystemCommand } = await import('../commands/node.js');
    return nodeChecksystemCommand(opts, systemHost, session.ctx());
  },
});

const diags = leaf<[], { logDir: string }>({
  name: 'diags',
  usage: {
    description: 'Create a diagnostics bundle of this host: its network state and the Calico logs.',
    options: [
      {
        flags: '--log-dir <LOG_DIR>',
        description: 'the directory containing Calico logs',
        default: '/var/log/calico',
      },
      acceptedMismatchFlag('diags never checks versions'),
    ],
  },
  run: async ({ opts }, session) => {
    const { nodeDiagsCommand } = await import('../commands/node-diags.js');
    return nodeDiagsCommand(opts, { isRoot: () => process.getuid?.() === 0 }, session.ctx());
  },
});

const run = leaf<[string[]], Record<string, never>>({
  name: 'run',
  usage: { arguments: [{ name: '[args...]' }], allowUnknownOption: true },
  run: async () => {
    throw new CtlError('unsupported', 'calicoctl node run is not available in this build yet');
  },
});

export const node: GroupCommand = {
  name: 'node',
  usage: { description: 'Calico node management.' },
  subcommands: [status, checksystem, diags, run],
};
