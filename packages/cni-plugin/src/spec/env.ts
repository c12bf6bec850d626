/**
 * The invocation environment of a CNI plugin (pure: takes the env as data).
 *
 * Required variables per command, as the spec lists them:
 *
 * | command | required                                           | optional              |
 * | ------- | -------------------------------------------------- | --------------------- |
 * | ADD     | CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME | CNI_ARGS, CNI_PATH    |
 * | DEL     | CNI_COMMAND, CNI_CONTAINERID, CNI_IFNAME            | CNI_NETNS, CNI_ARGS, CNI_PATH |
 * | CHECK   | CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_PATH | CNI_ARGS    |
 * | VERSION | CNI_COMMAND                                        |                       |
 * | STATUS  | CNI_COMMAND                                        | CNI_PATH              |
 * | GC      | CNI_COMMAND, CNI_PATH                              |                       |
 *
 * A missing or malformed variable is error code 4 naming every such variable.
 */
import { CniPluginError } from '../errors.js';
import { type CniArgs, parseCniArgs } from './cni-args.js';
import { CNI_COMMANDS, type CniCommand } from './versions.js';

export type Env = Readonly<Record<string, string | undefined>>;

const REQUIRED: Record<CniCommand, readonly string[]> = {
  ADD: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'],
  DEL: ['CNI_CONTAINERID', 'CNI_IFNAME'],
  CHECK: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH'],
  VERSION: [],
  STATUS: [],
  GC: ['CNI_PATH'],
};

export function requiredEnv(command: CniCommand): readonly string[] {
  return REQUIRED[command];
}

export interface Invocation {
  command: CniCommand;
  containerId: string;
  netns: string;
  ifName: string;
  args: CniArgs;
  /** CNI_PATH split on `:`, empty entries dropped. */
  path: string[];
}

export function parseCommand(env: Env): CniCommand {
  const cmd = env.CNI_COMMAND;
  if (cmd === undefined || cmd === '') {
    throw new CniPluginError('invalid-env', 'required env variables [CNI_COMMAND] missing');
  }
  if (!(CNI_COMMANDS as readonly string[]).includes(cmd)) {
    throw new CniPluginError('invalid-env', `unknown CNI_COMMAND: ${cmd}`, {
      details: `CNI_COMMAND must be one of ${CNI_COMMANDS.join(', ')}`,
    });
  }
  return cmd as CniCommand;
}

export function parseInvocation(env: Env): Invocation {
  const command = parseCommand(env);
  const missing = REQUIRED[command].filter((k) => env[k] === undefined || env[k] === '');
  if (missing.length > 0) {
    throw new CniPluginError('invalid-env', `required env variables [${missing.join(',')}] missing`, {
      details: `${command} needs ${REQUIRED[command].join(', ')}`,
    });
  }
  const containerId = env.CNI_CONTAINERID ?? '';
  if (containerId !== '') validateContainerId(containerId);
  const ifName = env.CNI_IFNAME ?? '';
  if (ifName !== '') validateInterfaceName(ifName);
  return {
    command,
    containerId,
    netns: env.CNI_NETNS ?? '',
    ifName,
    args: parseCniArgs(env.CNI_ARGS),
    path: (env.CNI_PATH ?? '').split(':').filter((p) => p !== ''),
  };
}

/** Spec: starts with an alphanumeric, then alphanumerics, `_`, `.` or `-`. */
export function validateContainerId(id: string): void {
  if (!/^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/.test(id)) {
    throw new CniPluginError('invalid-env', `CNI_CONTAINERID: invalid characters in container ID "${id}"`, {
      details: 'a container ID starts with a letter or digit, followed by letters, digits, "_", "." or "-"',
    });
  }
}

/** Linux rules: 1–15 bytes, not `.` or `..`, no `/`, `:` or whitespace. */
export function validateInterfaceName(name: string): void {
  const bad = (why: string) =>
    new CniPluginError('invalid-env', `CNI_IFNAME: interface name "${name}" ${why}`);
  if (Buffer.byteLength(name) > 15) throw bad('is too long (at most 15 bytes)');
  if (name === '.' || name === '..') throw bad('is not allowed');
  if (/[/:\s]/.test(name)) throw bad('contains "/", ":" or whitespace');
}
