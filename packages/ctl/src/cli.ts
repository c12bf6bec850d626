/**
 * The command line: commander parses, the command table (cli/table.ts) says what each command
 * takes and does, and this file dispatches.
 *
 *   argv ──old flag spellings──► commander (the tree from COMMAND_TABLE) ──► global flags (log
 *        level, --context, --allow-version-mismatch) ──► the matched command's run(call, session)
 *        ──► exit code; CtlError or a datastore error → its message on stderr, exit 1
 *
 * Nothing here touches the process: I/O and the datastore connection come in through `CliDeps`,
 * so tests drive the real parser against an in-memory datastore. The connection and the cluster
 * version check are the session's (cli/session.ts); each command's name, usage and run are its own
 * module under cli/.
 *
 * Building the tree and parsing argv needs only commander and the names, flags and help texts of
 * the table. Each run imports its command's module (and with it the api, datastore, YAML, ...)
 * when it runs: `calicoctl --version` or `--help` loads none of them, and a split bundle (the
 * native executable) parses only the chunks the command that runs reaches.
 */
import { Command, CommanderError } from 'commander';
import { type CtlCommand, type Dispatch, defineCommand } from './cli/command.js';
import type { CliDeps } from './cli/deps.js';
import { CliSession } from './cli/session.js';
import { COMMAND_TABLE } from './cli/table.js';
import { CtlError, EXIT_FAILURE, EXIT_OK } from './errors.js';
import { createLogger, parseLogLevel } from './log.js';

export { type CliDeps, type Connection, type ConnectOptions, DEFAULT_CONFIG_PATH } from './cli/deps.js';

/**
 * Whether `e` is the datastore's error. Its module is loaded here only for an error that is not
 * calicoctl's own; one the datastore threw means a command has loaded it already.
 */
async function isDatastoreError(e: Error): Promise<boolean> {
  const { DatastoreError } = await import('@calico-ts/datastore');
  return e instanceof DatastoreError;
}

/** The top-level command with the global flags; the hook reads them before any command runs. */
function programFor(session: CliSession): Command {
  const { io } = session.deps;
  return new Command('calicoctl')
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
      const log = createLogger(level, io.stderr, session.deps.now);
      log.info(`Log level set to ${level}`);
      session.setGlobals(log, !!o.allowVersionMismatch, o.context);
    });
}

/**
 * Commander builds a whole command tree in ~3 ms, more than some commands spend on their own work;
 * so only the command that runs is defined in full. Every other one is entered with just its name
 * and description, in the same place, so unknown-command errors and suggestions are unchanged. The
 * full tree is built when the command line names no known command, or asks for help anywhere (the
 * command list shows each one's arguments and options).
 */
function addCommands(program: Command, wanted: CtlCommand | undefined, full: boolean, dispatch: Dispatch) {
  for (const spec of COMMAND_TABLE) {
    const command = program.command(spec.name);
    if (full || spec === wanted) defineCommand(command, spec, dispatch);
    else if (spec.usage.description !== undefined) command.description(spec.usage.description);
  }
}

/** The whole command line: `argv` (without the program name) in, the exit code out; never throws. */
export async function runCli(argv: readonly string[], deps: CliDeps): Promise<number> {
  const { io } = deps;
  const args = [...argv];
  const cmdIndex = args.findIndex((a) => !a.startsWith('-'));
  const wanted = COMMAND_TABLE.find((c) => c.name === args[cmdIndex]);
  const aliases = wanted && 'flagAliases' in wanted ? wanted.flagAliases : undefined;
  if (aliases) {
    for (let i = cmdIndex + 1; i < args.length; i++) {
      const a = args[i]!;
      if (Object.hasOwn(aliases, a)) args[i] = aliases[a]!;
    }
  }

  const session = new CliSession(deps, args);
  let exitCode = EXIT_OK;
  const program = programFor(session);
  const full = wanted === undefined || args.some((a) => a === '-h' || a === '--help');
  addCommands(program, wanted, full, async (leaf, call) => {
    exitCode = await leaf.run(call, session);
  });

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
      io.stderr(`${session.usageError().message}\n`);
      return EXIT_FAILURE;
    }
    if (e instanceof CtlError || (e instanceof Error && (await isDatastoreError(e)))) {
      io.stderr(`${e.message}\n`);
      return EXIT_FAILURE;
    }
    io.stderr(`${e instanceof Error ? e.message : String(e)}\n`);
    session.log.debug(e instanceof Error && e.stack ? e.stack : String(e));
    return EXIT_FAILURE;
  }
}
