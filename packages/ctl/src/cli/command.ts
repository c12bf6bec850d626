/**
 * What a calicoctl command is: its name, its usage (the help text, arguments and options commander
 * parses) and `run`. A group (`ipam`, `node`, `datastore migrate`) is a name, a description and its
 * subcommands. `defineCommand` turns one entry into commander's command, in the order the usage
 * lists it, which is the order help prints.
 *
 *   table.ts: [create, replace, …, cluster] ──defineCommand──► commander tree
 *   argv ──commander──► the leaf that matched: run({args, opts}, session) ──► exit code
 *
 * A command's module holds only texts and `run`; `run` imports what does the work (commands/*.ts)
 * when it runs, so the tree costs commander and these strings, nothing more.
 */
import { type Command, Option } from 'commander';
import type { CliSession } from './session.js';

/** A positional argument: `<REQUIRED>`, `[OPTIONAL]`, `[MANY...]`. */
export interface ArgumentSpec {
  name: string;
  description?: string;
}

/** An option as commander declares it: `-f, --filename <FILENAME>`. */
export interface OptionSpec {
  flags: string;
  description: string;
  default?: string;
  /** The option must be given. */
  required?: boolean;
  /** Given several times, every value is kept, in order (a string[]). */
  repeatable?: boolean;
}

export interface Usage {
  description?: string;
  arguments?: readonly ArgumentSpec[];
  options?: readonly OptionSpec[];
  /** Text printed after the generated help. */
  after?: string;
  /** Unknown options are taken as arguments (`node run`). */
  allowUnknownOption?: boolean;
}

/** What commander parsed for a leaf: its positional arguments in order, and its options. */
export interface Call<A extends readonly unknown[], O> {
  args: A;
  opts: O;
}

export interface LeafCommand<A extends readonly unknown[] = unknown[], O = Record<string, unknown>> {
  name: string;
  usage: Usage;
  /** Old spellings of its flags, rewritten before parsing (`get -a` for `-A`, as upstream). */
  flagAliases?: Readonly<Record<string, string>>;
  /** The exit code; a thrown `CtlError` (or datastore error) becomes its message and exit 1. */
  run(call: Call<A, O>, session: CliSession): Promise<number>;
}

export interface GroupCommand {
  name: string;
  usage: { description: string };
  subcommands: readonly CtlCommand[];
}

export type CtlCommand = LeafCommand | GroupCommand;

/** Runs the leaf commander matched (the CLI entry keeps its exit code). */
export type Dispatch = (leaf: LeafCommand, call: Call<unknown[], Record<string, unknown>>) => Promise<void>;

/** A leaf with its own argument and option types, as the table holds it. */
export function leaf<A extends readonly unknown[], O>(command: LeafCommand<A, O>): LeafCommand {
  return command as unknown as LeafCommand;
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** `command` (already added to its parent, as `parent.command(name)`) given `spec`'s usage and run. */
export function defineCommand(command: Command, spec: CtlCommand, dispatch: Dispatch): Command {
  if (spec.usage.description !== undefined) command.description(spec.usage.description);
  if ('subcommands' in spec) {
    for (const sub of spec.subcommands) defineCommand(command.command(sub.name), sub, dispatch);
    return command;
  }
  const usage: Usage = spec.usage;
  if (usage.allowUnknownOption) command.allowUnknownOption();
  for (const a of usage.arguments ?? []) command.argument(a.name, a.description);
  for (const o of usage.options ?? []) {
    const option = new Option(o.flags, o.description);
    if (o.default !== undefined) option.default(o.default);
    if (o.required) option.makeOptionMandatory();
    if (o.repeatable) option.argParser(collect);
    command.addOption(option);
  }
  if (usage.after !== undefined) command.addHelpText('after', usage.after);
  // Commander calls an action with the arguments, then the options, then the command.
  return command.action(async (...params: unknown[]) => {
    const args = params.slice(0, -2);
    const opts = params.at(-2) as Record<string, unknown>;
    await dispatch(spec, { args, opts });
  });
}
