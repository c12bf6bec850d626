/**
 * The command line: commander parses, this file wires each command to its function.
 *
 *   argv ──commander──► options ──► connect (config file/env → Datastore) ──► version check ──►
 *        command(args, datastore, {io, log}) ──► exit code; CtlError → message on stderr, exit 1
 *
 * Nothing here touches the process: I/O and the datastore connection come in through `CliDeps`,
 * so tests drive the real parser against an in-memory datastore.
 *
 * Building the tree and parsing argv needs only commander and the names, flags and help text
 * below. Each action imports its command's module (and with it the api, datastore, YAML, ...)
 * when it runs: `calicoctl --version` or `--help` loads none of them, and a split bundle (the
 * native executable) parses only the chunks the command that runs reaches.
 */
import type { Datastore, KVStore } from '@calico-ts/datastore';
import { Command, CommanderError, Option } from 'commander';
import type { CommandContext } from './commands/context.js';
import type { IpamDeps } from './commands/ipam.js';
import { CtlError, EXIT_FAILURE, EXIT_OK } from './errors.js';
import type { CommandIO } from './io.js';
import { kindHelpList } from './kinds.js';
import { createLogger, type Logger, parseLogLevel } from './log.js';
import type { NodeHost } from './node/node-host.js';
import type { SystemHost } from './node/system-host.js';
import { CLIENT_VERSION } from './version.js';

export const DEFAULT_CONFIG_PATH = '/etc/calico/calicoctl.cfg';

export interface Connection {
  datastore: Datastore;
  /** Raw keys, for datastore migration; absent where the backend has none. */
  kv?: KVStore;
  /** The kubeconfig the configuration names, if any (`cluster diags` hands it to kubectl). */
  kubeconfig?: string;
  close(): Promise<void>;
}

/** What the command line adds to the loaded configuration. */
export interface ConnectOptions {
  /** `--context`: the kubeconfig context to use (Kubernetes datastore), over the configuration's. */
  context?: string;
}

export interface CliDeps {
  io: CommandIO;
  /** Load the client configuration (`-c` file, else env) and connect. */
  connect(configFile: string, log: Logger, options?: ConnectOptions): Promise<Connection>;
  /** Clock for log timestamps (tests pin it). */
  now?: () => number;
  /** Cluster GUID for a ClusterInformation calicoctl creates (tests pin it). */
  newClusterGUID?: () => string;
  /** This host, for `node status`. */
  nodeHost?: NodeHost;
  /** This host's kernel and programs, for `node checksystem`. */
  systemHost?: SystemHost;
  /** Pauses (deleting an IPPool waits briefly after disabling it); tests make it instant. */
  sleep?: (ms: number) => Promise<void>;
}

/** The top-level commands, in the order help lists them, with their descriptions. */
const COMMANDS = {
  create: 'Create resources by file, directory or stdin.',
  replace: 'Replace existing resources by file, directory or stdin.',
  apply: 'Apply resources by file, directory or stdin: create what is new, replace what exists.',
  patch: 'Patch a resource in place.',
  delete: 'Delete resources by file, directory, stdin, or kind and names.',
  get: 'Display resources by file, directory, stdin, or kind and names.',
  label: 'Add, update or remove a label of a resource.',
  validate: 'Validate resources by file, directory or stdin, offline.',
  version: 'Display the client and cluster versions.',
  datastore: 'Calico datastore management.',
  completion: 'Print a shell completion script (bash or zsh).',
  ipam: 'IP address management.',
  node: 'Calico node management.',
  cluster: 'Calico cluster management.',
} as const;

const DATASTORE_INTRO =
  'Set the Calico datastore access information in the environment variables or\nsupply details in a config file.\n\n';

interface Common {
  config: string;
  allowVersionMismatch?: boolean;
  namespace?: string;
  context?: string;
}

function usageError(argv: readonly string[]): CtlError {
  return new CtlError(
    'usage',
    `Invalid option: 'calicoctl ${argv.join(' ')}'. Use flag '--help' to read about a specific subcommand.`,
  );
}

/** `get` and `delete` name their resources either by KIND [NAME…] or by `-f`, never both or neither. */
function requireKindOrFile(
  argv: readonly string[],
  kind: string | undefined,
  filename: string | undefined,
): void {
  if ((kind === undefined) === (filename === undefined)) throw usageError(argv);
}

/**
 * Whether `e` is the datastore's error. Its module is loaded here only for an error that is not
 * calicoctl's own; one the datastore threw means a command has loaded it already.
 */
async function isDatastoreError(e: Error): Promise<boolean> {
  const { DatastoreError } = await import('@calico-ts/datastore');
  return e instanceof DatastoreError;
}

export async function runCli(argv: readonly string[], deps: CliDeps): Promise<number> {
  const { io } = deps;
  let log: Logger = createLogger('panic', io.stderr, deps.now);
  let exitCode = EXIT_OK;
  let globalAllowMismatch = false;
  let globalContext: string | undefined;
  /** The streams commands write to: `io`, or a holding copy while a read runs beside the check. */
  let commandIO: CommandIO = io;
  const ctx = (): CommandContext => ({ io: commandIO, log, newClusterGUID: deps.newClusterGUID });

  // Upstream accepts `-a` for `get --all-namespaces` (older spelling).
  const args = [...argv];
  const cmdIndex = args.findIndex((a) => !a.startsWith('-'));
  if (args[cmdIndex] === 'get')
    for (let i = cmdIndex + 1; i < args.length; i++) if (args[i] === '-a') args[i] = '-A';

  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const ipamOf = async (ds: Datastore, conn: Connection): Promise<IpamDeps> => {
    if (!conn.kv) throw new CtlError('unsupported', 'IPAM is not available on this datastore');
    const { IpamClient, IpamStore } = await import('@calico-ts/ipam');
    const store = new IpamStore(conn.kv);
    return { datastore: ds, store, ipam: new IpamClient(ds, store) };
  };

  /**
   * `fn` with a datastore connection, after the cluster version check (unless `check: false`). A
   * read-only command (`readOnly`) runs beside the check instead, so its reads do not wait for the check's round
   * trip; what it writes is held until the check has passed, and a mismatch prints only itself.
   */
  const withDatastore = async (
    opts: Common,
    fn: (ds: Datastore, conn: Connection) => Promise<number>,
    { check = true, readOnly = false }: { check?: boolean; readOnly?: boolean } = {},
  ) => {
    const conn = await deps.connect(opts.config, log, connectOptions(opts));
    try {
      if (check && !opts.allowVersionMismatch && !globalAllowMismatch) {
        const { checkVersionMismatch } = await import('./cluster.js');
        const checked = checkVersionMismatch(conn.datastore, CLIENT_VERSION);
        if (readOnly) {
          exitCode = await besideCheck(checked, () => fn(conn.datastore, conn));
          return;
        }
        await checked;
      }
      exitCode = await fn(conn.datastore, conn);
    } finally {
      await conn.close().catch(() => {});
    }
  };

  const connectOptions = (opts: Common): ConnectOptions => {
    const context = opts.context ?? globalContext;
    return context ? { context } : {};
  };

  const besideCheck = async (checked: Promise<void>, run: () => Promise<number>): Promise<number> => {
    const held: { to: 'stdout' | 'stderr'; text: string }[] = [];
    commandIO = {
      ...io,
      stdout: (text) => held.push({ to: 'stdout', text }),
      stderr: (text) => held.push({ to: 'stderr', text }),
    };
    const [check, ran] = await Promise.allSettled([checked, run()]).finally(() => {
      commandIO = io;
    });
    if (check.status === 'rejected') throw check.reason;
    for (const h of held) io[h.to](h.text);
    if (ran.status === 'rejected') throw ran.reason;
    return ran.value;
  };

  const program = new Command('calicoctl')
    .description(
      'calicoctl manages Calico network and security policy, endpoint configuration\nand the Calico datastore.',
    )
    .usage('[options] <command> [<args>...]')
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr, outputError: () => {} })
    .helpCommand(false)
    .option('-l, --log-level <level>', 'log level: panic, fatal, error, warn, info, debug', 'panic')
    .option('--context <context>', 'name of the kubeconfig context to use (Kubernetes datastore)')
    .option('--allow-version-mismatch', 'allow client and cluster versions to differ')
    .version("Run 'calicoctl version' to see version information.", '--version')
    .hook('preAction', (thisCommand) => {
      const o = thisCommand.opts<{ logLevel: string; allowVersionMismatch?: boolean; context?: string }>();
      const level = parseLogLevel(o.logLevel);
      if (!level) {
        throw new CtlError(
          'usage',
          `Unknown log level: ${o.logLevel}, expected one of: \npanic, fatal, error, warn, info, debug.`,
        );
      }
      log = createLogger(level, io.stderr, deps.now);
      log.info(`Log level set to ${level}`);
      globalAllowMismatch = !!o.allowVersionMismatch;
      globalContext = o.context;
    });

  const common = (c: Command, opts: { namespace?: boolean; config?: boolean } = {}) => {
    if (opts.config !== false) {
      c.option(
        '-c, --config <CONFIG>',
        'path to the file with connection configuration (YAML or JSON)',
        DEFAULT_CONFIG_PATH,
      );
    }
    if (opts.namespace) {
      c.option('-n, --namespace <NS>', 'namespace of namespaced resources (default "default")');
    }
    c.option('--context <context>', 'name of the kubeconfig context to use');
    c.option('--allow-version-mismatch', 'allow client and cluster versions to differ');
    return c;
  };
  const fileOptions = (c: Command, required: boolean) => {
    const f = new Option(
      '-f, --filename <FILENAME>',
      'file, directory (its .yaml/.yml/.json files) or - for stdin',
    );
    if (required) f.makeOptionMandatory();
    c.addOption(f)
      .option('-R, --recursive', 'walk directories given with -f recursively')
      .option('--skip-empty', 'do not fail on files or directories without resources');
    return c;
  };
  const kindsHelp = `\nValid resource types are:\n\n${kindHelpList()}\n\nThe resource type is case-insensitive and may be pluralized.\n`;

  /**
   * Commander builds a whole command tree in ~3 ms, more than some commands spend on their own
   * work; so only the command that runs is defined in full. Every other one is entered with just
   * its name and description, in the same place, so unknown-command errors and suggestions are
   * unchanged. The full tree is built when the command line names no known command, or asks for
   * help anywhere (the command list shows each one's arguments and options).
   */
  const wanted = args[cmdIndex];
  const fullTree =
    wanted === undefined ||
    !Object.hasOwn(COMMANDS, wanted) ||
    args.some((a) => a === '-h' || a === '--help');
  const inFull = (name: keyof typeof COMMANDS): boolean => {
    if (fullTree || name === wanted) return true;
    top(name);
    return false;
  };
  const top = (name: keyof typeof COMMANDS) => program.command(name).description(COMMANDS[name]);

  if (inFull('create')) {
    common(
      fileOptions(top('create'), true).option(
        '--skip-exists',
        'treat resources that already exist as created',
      ),
      { namespace: true },
    )
      .addHelpText(
        'after',
        `\n${DATASTORE_INTRO}Every document is validated before any is written.${kindsHelp}`,
      )
      .action(
        async (
          o: Common & { filename: string; recursive?: boolean; skipEmpty?: boolean; skipExists?: boolean },
        ) =>
          withDatastore(o, async (ds) => {
            const { createCommand } = await import('./commands/write.js');
            return createCommand(o, ds, ctx());
          }),
      );
  }

  if (inFull('replace')) {
    common(fileOptions(top('replace'), true), {
      namespace: true,
    })
      .addHelpText('after', `\n${DATASTORE_INTRO}A resource that does not exist is an error.${kindsHelp}`)
      .action(async (o: Common & { filename: string }) =>
        withDatastore(o, async (ds) => {
          const { replaceCommand } = await import('./commands/write.js');
          return replaceCommand(o, ds, ctx());
        }),
      );
  }

  if (inFull('apply')) {
    common(fileOptions(top('apply'), true), { namespace: true })
      .addHelpText(
        'after',
        `\n${DATASTORE_INTRO}Give the complete resource: its spec replaces the stored one. Calico v1 documents\n(apiVersion: v1, e.g. kind: ipPool) are converted to projectcalico.org/v3 first.${kindsHelp}`,
      )
      .action(async (o: Common & { filename: string }) =>
        withDatastore(o, async (ds) => {
          const { applyCommand } = await import('./commands/write.js');
          return applyCommand(o, ds, ctx());
        }),
      );
  }

  if (inFull('patch')) {
    common(
      top('patch')
        .argument('<KIND>')
        .argument('<NAME>')
        .requiredOption('-p, --patch <PATCH>', 'the patch, JSON')
        .option('-t, --type <TYPE>', 'strategic (default), merge (RFC 7386) or json (RFC 6902)', 'strategic'),
      { namespace: true },
    )
      .addHelpText('after', kindsHelp)
      .action(async (kind: string, name: string, o: Common & { patch: string; type: string }) =>
        withDatastore(o, async (ds) => {
          const { patchCommand } = await import('./commands/patch.js');
          return patchCommand(
            { kind, name, patch: o.patch, type: o.type, namespace: o.namespace },
            ds,
            ctx(),
          );
        }),
      );
  }

  if (inFull('delete')) {
    common(
      fileOptions(top('delete').argument('[KIND]').argument('[NAME...]'), false).option(
        '-s, --skip-not-exists',
        'treat resources that do not exist as deleted',
      ),
      { namespace: true },
    )
      .addHelpText('after', kindsHelp)
      .action(
        async (
          kind: string | undefined,
          names: string[],
          o: Common & { filename?: string; skipNotExists?: boolean },
        ) => {
          requireKindOrFile(args, kind, o.filename);
          return withDatastore(o, async (ds, conn) => {
            const { deleteCommand } = await import('./commands/write.js');
            const ipam = conn.kv ? (await ipamOf(ds, conn)).ipam : undefined;
            const deps = ipam
              ? {
                  pools: { releasePoolAffinities: (cidr: string) => ipam.releasePoolAffinities(cidr), sleep },
                  nodeIpam: ipam,
                }
              : {};
            return deleteCommand({ ...o, kind, names }, ds, ctx(), deps);
          });
        },
      );
  }

  if (inFull('get')) {
    common(
      fileOptions(top('get').argument('[KIND]').argument('[NAME...]'), false)
        .option(
          '-o, --output <OUTPUT>',
          'ps, wide, yaml, json, custom-columns=..., go-template=..., go-template-file=...',
          'ps',
        )
        .option('-A, --all-namespaces', 'list across all namespaces')
        .option('--export', 'strip cluster-specific metadata (with names only)'),
      { namespace: true },
    )
      .addHelpText('after', kindsHelp)
      .action(
        async (
          kind: string | undefined,
          names: string[],
          o: Common & { filename?: string; output: string; allNamespaces?: boolean; export?: boolean },
        ) => {
          requireKindOrFile(args, kind, o.filename);
          return withDatastore(
            o,
            async (ds) => {
              const { getCommand } = await import('./commands/get.js');
              return getCommand({ ...o, kind, names }, ds, ctx());
            },
            { readOnly: true },
          );
        },
      );
  }

  if (inFull('label')) {
    common(
      top('label')
        .argument('<KIND>')
        .argument('<NAME>')
        .argument('<LABEL>', 'key=value, or key with --remove')
        .option('--overwrite', 'replace the value of an existing key')
        .option('--remove', 'remove the key'),
      { namespace: true },
    ).action(
      async (
        kind: string,
        name: string,
        label: string,
        o: Common & { overwrite?: boolean; remove?: boolean },
      ) =>
        withDatastore(o, async (ds) => {
          const { labelCommand } = await import('./commands/label.js');
          return labelCommand(
            { kind, name, label, overwrite: o.overwrite, remove: o.remove, namespace: o.namespace },
            ds,
            ctx(),
          );
        }),
    );
  }

  if (inFull('validate')) {
    fileOptions(top('validate'), true)
      .option('--allow-version-mismatch', 'accepted for compatibility; validate never contacts a datastore')
      .addHelpText('after', kindsHelp)
      .action(async (o: { filename: string; recursive?: boolean; skipEmpty?: boolean }) => {
        const { validateCommand } = await import('./commands/validate.js');
        exitCode = await validateCommand(o, ctx());
      });
  }

  if (inFull('version')) {
    common(top('version'))
      .option('--poll <POLL>', 'poll the cluster information every POLL (e.g. 1s, 10m)')
      .action(async (o: Common & { poll?: string }) => {
        const { versionCommand } = await import('./commands/version.js');
        let conn: Connection | undefined;
        try {
          exitCode = await versionCommand(
            { poll: o.poll },
            async () => {
              conn = await deps.connect(o.config, log, connectOptions(o));
              return conn.datastore;
            },
            ctx(),
          );
        } finally {
          await conn?.close().catch(() => {});
        }
      });
  }

  if (inFull('datastore')) {
    const datastore = top('datastore');
    const migrate = datastore.command('migrate').description('Migrate the contents of an etcdv3 datastore.');
    common(
      migrate.command('export').description('Export the whole datastore (lock it first) to stdout.'),
    ).action(async (o: Common) =>
      withDatastore(o, async (ds, conn) => {
        const { exportCommand } = await import('./commands/datastore.js');
        return exportCommand({ datastore: ds, kv: conn.kv }, ctx());
      }),
    );
    common(
      migrate
        .command('import')
        .description(
          'Import an export into a datastore without Calico data: another etcd, or a Kubernetes cluster with the Calico CRDs.',
        )
        .requiredOption('-f, --filename <FILENAME>', 'the export file, or - for stdin'),
    ).action(async (o: Common & { filename: string }) =>
      withDatastore(
        o,
        async (ds, conn) => {
          const { importCommand } = await import('./commands/datastore.js');
          return importCommand({ filename: o.filename }, { datastore: ds, kv: conn.kv }, ctx());
        },
        { check: false },
      ),
    );
    common(
      migrate.command('lock').description('Lock the datastore (datastoreReady: false) for migration.'),
    ).action(async (o: Common) =>
      withDatastore(o, async (ds) => {
        const { lockCommand } = await import('./commands/datastore.js');
        return lockCommand(ds, ctx());
      }),
    );
    common(migrate.command('unlock').description('Unlock the datastore (datastoreReady: true).')).action(
      async (o: Common) =>
        withDatastore(o, async (ds) => {
          const { unlockCommand } = await import('./commands/datastore.js');
          return unlockCommand(ds, ctx());
        }),
    );
  }

  if (inFull('completion')) {
    top('completion')
      .argument('<SHELL>')
      .action(async (shell: string) => {
        const { completionCommand } = await import('./commands/completion.js');
        exitCode = completionCommand(shell, ctx());
      });
  }

  if (inFull('ipam')) {
    const ipam = top('ipam');
    const ipamCommands = () => import('./commands/ipam.js');
    const withIpam = (o: Common, fn: (deps: IpamDeps) => Promise<number>) =>
      withDatastore(o, async (ds, conn) => fn(await ipamOf(ds, conn)));
    common(
      ipam
        .command('show')
        .description('Show details of a Calico assigned IP address, or of overall IP usage.')
        .option('--ip <IP>', 'report whether this IP address is in use, and by whom')
        .option('--show-blocks', 'show detailed information for IP blocks as well as pools')
        .option('--show-borrowed', 'show detailed information for "borrowed" IP addresses')
        .option('--show-configuration', 'show the current Calico IPAM configuration'),
    ).action(
      async (
        o: Common & {
          ip?: string;
          showBlocks?: boolean;
          showBorrowed?: boolean;
          showConfiguration?: boolean;
        },
      ) => {
        const chosen = [o.ip !== undefined, o.showBlocks, o.showBorrowed, o.showConfiguration].filter(
          Boolean,
        );
        if (chosen.length > 1) throw usageError(args);
        return withIpam(o, async (d) => (await ipamCommands()).ipamShowCommand(o, d, ctx()));
      },
    );
    common(
      ipam
        .command('check')
        .description('Check the integrity of the IPAM data against the workloads and nodes using addresses.')
        .option('-o, --output <FILE>', 'write a machine-readable report to FILE')
        .option('--show-all-ips', 'print every IP that is checked')
        .option('--show-problem-ips', 'print every IP that is leaked or not allocated properly')
        .option(
          '--kubeconfig <KUBECONFIG>',
          'accepted for compatibility; not used (Pods are read through the configured datastore)',
        ),
    ).action(async (o: Common & { output?: string; showAllIps?: boolean; showProblemIps?: boolean }) =>
      withIpam(o, async (d) => (await ipamCommands()).ipamCheckCommand(o, d, ctx())),
    );
    common(
      ipam
        .command('release')
        .description('Release Calico assigned IP addresses: one, or the leaked ones of check reports.')
        .option('--ip <IP>', 'IP address to release')
        .option(
          '--from-report <REPORT>',
          'release what the report calls leaked; given several times, only what every report calls leaked',
          (v: string, prev: string[] = []) => [...prev, v],
        )
        .option(
          '--force',
          'release even when the datastore is not locked or the report is of another version',
        ),
    ).action(async (o: Common & { ip?: string; fromReport?: string[]; force?: boolean }) =>
      withIpam(o, async (d) => (await ipamCommands()).ipamReleaseCommand(o, d, ctx())),
    );
    common(
      ipam
        .command('configure')
        .description('Modify the Calico IPAM configuration.')
        .option('--strictaffinity <true/false>', 'when true, addresses are never borrowed from other hosts')
        .option('--max-blocks-per-host <number>', 'the most blocks one host may own (0: no limit)')
        .option('--kubevirt-ip-persistence <Enabled|Disabled>', 'whether KubeVirt VMs keep their addresses'),
    ).action(
      async (
        o: Common & { strictaffinity?: string; maxBlocksPerHost?: string; kubevirtIpPersistence?: string },
      ) => withIpam(o, async (d) => (await ipamCommands()).ipamConfigureCommand(o, d, ctx())),
    );
    common(
      ipam
        .command('split')
        .description('Split an IP pool into a power of 2 smaller pools of equal size (datastore locked).')
        .argument('<NUMBER>', 'how many pools: a power of 2')
        .option('--cidr <CIDR>', 'CIDR of the IP pool to split')
        .option('--name <POOL_NAME>', 'name of the IP pool to split'),
    ).action(async (number: string, o: Common & { cidr?: string; name?: string }) =>
      withIpam(o, async (d) => (await ipamCommands()).ipamSplitCommand({ ...o, number }, d, ctx())),
    );
  }

  if (inFull('node')) {
    const node = top('node');
    node
      .command('status')
      .description('Check the Calico node on this host: its agent, and BGP peering states from BIRD.')
      .option('--allow-version-mismatch', 'accepted for compatibility; node status never checks versions')
      .action(async () => {
        if (!deps.nodeHost) throw new CtlError('unsupported', 'node status is not available here');
        const { nodeStatusCommand } = await import('./commands/node.js');
        exitCode = await nodeStatusCommand(deps.nodeHost, ctx());
      });
    node
      .command('checksystem')
      .description('Check the compatibility of this host to run a Calico node.')
      .option('-f, --kernel-config <kernel-config>', 'read the kernel configuration from this file')
      .option('--allow-version-mismatch', 'accepted for compatibility; checksystem never checks versions')
      .action(async (o: { kernelConfig?: string }) => {
        if (!deps.systemHost) throw new CtlError('unsupported', 'node checksystem is not available here');
        const { nodeChecksystemCommand } = await import('./commands/node.js');
        exitCode = await nodeChecksystemCommand(o, deps.systemHost, ctx());
      });
    node
      .command('diags')
      .description('Create a diagnostics bundle of this host: its network state and the Calico logs.')
      .option('--log-dir <LOG_DIR>', 'the directory containing Calico logs', '/var/log/calico')
      .option('--allow-version-mismatch', 'accepted for compatibility; diags never checks versions')
      .action(async (o: { logDir: string }) => {
        const { nodeDiagsCommand } = await import('./commands/node-diags.js');
        exitCode = await nodeDiagsCommand(o, { isRoot: () => process.getuid?.() === 0 }, ctx());
      });
    node
      .command('run')
      .allowUnknownOption()
      .argument('[args...]')
      .action(() => {
        throw new CtlError('unsupported', 'calicoctl node run is not available in this build yet');
      });
  }

  if (inFull('cluster')) {
    const cluster = top('cluster');
    common(
      cluster
        .command('diags')
        .description(
          'Create a diagnostics bundle of the cluster: every Calico resource, the Kubernetes view (kubectl) and the logs of Calico pods.',
        )
        .option('--since <SINCE>', 'only logs newer than this relative duration (10s, 5m, 1h)')
        .option('--max-logs <MAXLOGS>', 'logs of at most this many pods of each Calico component', '5')
        .option('--focus-nodes <NODES>', "comma-separated nodes whose pods' logs are taken first"),
    ).action(async (o: Common & { since?: string; maxLogs: string; focusNodes?: string }) =>
      withDatastore(o, async (ds, conn) => {
        const { clusterDiagsCommand } = await import('./commands/cluster-diags.js');
        return clusterDiagsCommand(o, { datastore: ds, kubeconfig: conn.kubeconfig }, ctx());
      }),
    );
  }

  try {
    if (args.length === 0) {
      io.stderr(program.helpInformation());
      return EXIT_FAILURE;
    }
    await program.parseAsync(args, { from: 'user' });
    return exitCode;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (
        e.code === 'commander.helpDisplayed' ||
        e.code === 'commander.version' ||
        e.code === 'commander.help'
      ) {
        return e.exitCode === 0 ? EXIT_OK : EXIT_FAILURE;
      }
      if (e.code === 'commander.unknownCommand') {
        io.stderr(`unknown command: ${JSON.stringify(args[cmdIndex])}\n${program.helpInformation()}\n`);
        return EXIT_FAILURE;
      }
      io.stderr(`${usageError(args).message}\n`);
      return EXIT_FAILURE;
    }
    if (e instanceof CtlError || (e instanceof Error && (await isDatastoreError(e)))) {
      io.stderr(`${e.message}\n`);
      return EXIT_FAILURE;
    }
    io.stderr(`${e instanceof Error ? e.message : String(e)}\n`);
    log.debug(e instanceof Error && e.stack ? e.stack : String(e));
    return EXIT_FAILURE;
  }
}
