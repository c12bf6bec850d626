/**
 * The pieces every lab command's parser is made of (pure): flags split from positionals by a
 * table of what each flag takes, one value or a whole number in a range, `-o table|json`, and the
 * one usage error every mistake becomes (`LabError('usage')`, pointing at `pnpm lab help`).
 */
import { LabError } from './errors.js';

export type Output = 'table' | 'json';

/** What a flag takes: one value (given once), a value that may repeat, or nothing. */
export type FlagKind = 'value' | 'list' | 'switch';

/** True when `-h` or `--help` comes before any `--`. */
export function asksHelp(args: readonly string[]): boolean {
  for (const a of args) {
    if (a === '--') return false;
    if (a === '-h' || a === '--help') return true;
  }
  return false;
}

/** A usage error: the message and where to find the commands. */
export const usage = (message: string): never => {
  throw new LabError('usage', `${message}\nRun \`pnpm lab help\` for the commands.`);
};

/** Splits flags from positionals; `--` ends flags (the rest is returned as `rest`). A `switch` takes no value. */
export function scan(
  args: readonly string[],
  known: Readonly<Record<string, FlagKind>>,
  command: string,
): { flags: Map<string, string[]>; positionals: string[]; rest: string[] | undefined } {
  const flags = new Map<string, string[]>();
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') return { flags, positionals, rest: args.slice(i + 1) };
    if (a.startsWith('-') && a !== '-') {
      const eq = a.indexOf('=');
      const name = eq >= 0 ? a.slice(0, eq) : a;
      if (!(name in known)) {
        const accepted = Object.keys(known);
        usage(
          `${command}: unknown flag ${name}` +
            (accepted.length > 0 ? ` (accepted: ${accepted.join(', ')})` : ' (it takes no flags)'),
        );
      }
      if (known[name] === 'switch') {
        if (eq >= 0) usage(`${command}: ${name} takes no value`);
        flags.set(name, [...(flags.get(name) ?? []), 'true']);
        continue;
      }
      const value = eq >= 0 ? a.slice(eq + 1) : args[++i];
      if (value === undefined) usage(`${command}: ${name} needs a value`);
      const list = flags.get(name) ?? [];
      list.push(value!);
      flags.set(name, list);
    } else {
      positionals.push(a);
    }
  }
  return { flags, positionals, rest: undefined };
}

export function one(flags: Map<string, string[]>, name: string): string | undefined {
  const v = flags.get(name);
  if (v && v.length > 1) usage(`${name} given more than once`);
  return v?.[0];
}

export function int(text: string, what: string, min: number, max: number): number {
  if (!/^[0-9]+$/.test(text) || Number(text) < min || Number(text) > max) {
    usage(`${what} must be a whole number from ${min} to ${max}, got "${text}"`);
  }
  return Number(text);
}

export function output(flags: Map<string, string[]>): Output {
  const o = one(flags, '-o') ?? one(flags, '--output') ?? 'table';
  if (o !== 'table' && o !== 'json') usage(`-o must be table or json, got "${o}"`);
  return o as Output;
}

export function noPositionals(command: string, p: readonly string[]): void {
  if (p.length > 0) usage(`${command}: unexpected argument "${p[0]}"`);
}
