/**
 * `calicoctl ipam show|check|release|configure|split`: their usage and runs (the work:
 * commands/ipam.ts, on the IPAM client and records the session builds over the connection).
 */
import { type GroupCommand, leaf } from './command.js';
import type { ConnectionFlags } from './session.js';
import { connectionOptions } from './shared.js';

const ipamCommands = () => import('../commands/ipam.js');

type ShowFlags = ConnectionFlags & {
  ip?: string;
  showBlocks?: boolean;
  showBorrowed?: boolean;
  showConfiguration?: boolean;
};

const show = leaf<[], ShowFlags>({
  name: 'show',
  usage: {
    description: 'Show details of a Calico assigned IP address, or of overall IP usage.',
    options: [
      { flags: '--ip <IP>', description: 'report whether this IP address is in use, and by whom' },
      { flags: '--show-blocks', description: 'show detailed information for IP blocks as well as pools' },
      { flags: '--show-borrowed', description: 'show detailed information for "borrowed" IP addresses' },
      { flags: '--show-configuration', description: 'show the current Calico IPAM configuration' },
      ...connectionOptions(),
    ],
  },
  run: async ({ opts }, session) => {
    const chosen = [opts.ip !== undefined, opts.showBlocks, opts.showBorrowed, opts.showConfiguration].filter(
      Boolean,
    );
    if (chosen.length > 1) throw session.usageError();
    return session.withIpam(opts, async (d) =>
      (await ipamCommands()).ipamShowCommand(opts, d, session.ctx()),
    );
  },
});

const check = leaf<[], ConnectionFlags & { output?: string; showAllIps?: boolean; showProblemIps?: boolean }>(
  {
    name: 'check',
    usage: {
      description: 'Check the integrity of the IPAM data against the workloads and nodes using addresses.',
      options: [
        { flags: '-o, --output <FILE>', description: 'write a machine-readable report to FILE' },
        { flags: '--show-all-ips', description: 'print every IP that is checked' },
        {
          flags: '--show-problem-ips',
          description: 'print every IP that is leaked or not allocated properly',
        },
        {
          flags: '--kubeconfig <KUBECONFIG>',
          description:
            'accepted for compatibility; not used (Pods are read through the configured datastore)',
        },
        ...connectionOptions(),
      ],
    },
    run: ({ opts }, session) =>
      session.withIpam(opts, async (d) => (await ipamCommands()).ipamCheckCommand(opts, d, session.ctx())),
  },
);

const release = leaf<[], ConnectionFlags & { ip?: string; fromReport?: string[]; force?: boolean }>({
  name: 'release',
  usage: {
    description: 'Release Calico assigned IP addresses: one, or the leaked ones of check reports.',
    options: [
      { flags: '--ip <IP>', description: 'IP address to release' },
      {
        flags: '--from-report <REPORT>',
        description:
          'release what the report calls leaked; given several times, only what every report calls leaked',
        repeatable: true,
      },
      {
        flags: '--force',
        description: 'release even when the datastore is not locked or the report is of another version',
      },
      ...connectionOptions(),
    ],
  },
  run: ({ opts }, session) =>
    session.withIpam(opts, async (d) => (await ipamCommands()).ipamReleaseCommand(opts, d, session.ctx())),
});

type ConfigureFlags = ConnectionFlags & {
  strictaffinity?: string;
  maxBlocksPerHost?: string;
  kubevirtIpPersistence?: string;
};

const configure = leaf<[], ConfigureFlags>({
  name: 'configure',
  usage: {
    description: 'Modify the Calico IPAM configuration.',
    options: [
      {
        flags: '--strictaffinity <true/false>',
        description: 'when true, addresses are never borrowed from other hosts',
      },
      {
        flags: '--max-blocks-per-host <number>',
        description: 'the most blocks one host may own (0: no limit)',
      },
      {
        flags: '--kubevirt-ip-persistence <Enabled|Disabled>',
        description: 'whether KubeVirt VMs keep their addresses',
      },
      ...connectionOptions(),
    ],
  },
  run: ({ opts }, session) =>
    session.withIpam(opts, async (d) => (await ipamCommands()).ipamConfigureCommand(opts, d, session.ctx())),
});

const split = leaf<[string], ConnectionFlags & { cidr?: string; name?: string }>({
  name: 'split',
  usage: {
    description: 'Split an IP pool into a power of 2 smaller pools of equal size (datastore locked).',
    arguments: [{ name: '<NUMBER>', description: 'how many pools: a power of 2' }],
    options: [
      { flags: '--cidr <CIDR>', description: 'CIDR of the IP pool to split' },
      { flags: '--name <POOL_NAME>', description: 'name of the IP pool to split' },
      ...connectionOptions(),
    ],
  },
  run: ({ args: [number], opts }, session) =>
    session.withIpam(opts, async (d) =>
      (await ipamCommands()).ipamSplitCommand({ ...opts, number }, d, session.ctx()),
    ),
});

export const ipam: GroupCommand = {
  name: 'ipam',
  usage: { description: 'IP address management.' },
  subcommands: [show, check, release, configure, split],
};
