/**
 * Options and help texts several commands share: the connection flags every datastore command
 * takes, `-f` and its companions, and the list of resource types. A command lists them where its
 * help shows them (commander prints options in the order they are declared).
 */
import { kindHelpList } from '../kinds.js';
import type { OptionSpec } from './command.js';
import { DEFAULT_CONFIG_PATH } from './deps.js';

export const DATASTORE_INTRO =
  'Set the Calico datastore access information in the environment variables or\nsupply details in a config file.\n\n';

/** After a resource command's help: the kinds it takes. */
export const KINDS_HELP = `\nValid resource types are:\n\n${kindHelpList()}\n\nThe resource type is case-insensitive and may be pluralized.\n`;

/** `-c`, `-n` (namespaced commands only), `--context`, `--allow-version-mismatch`. */
export function connectionOptions({ namespace = false }: { namespace?: boolean } = {}): OptionSpec[] {
  return [
    {
      flags: '-c, --config <CONFIG>',
      description: 'path to the file with connection configuration (YAML or JSON)',
      default: DEFAULT_CONFIG_PATH,
    },
    ...(namespace
      ? [
          {
            flags: '-n, --namespace <NS>',
            description: 'namespace of namespaced resources (default "default")',
          },
        ]
      : []),
    { flags: '--context <context>', description: 'name of the kubeconfig context to use' },
    { flags: '--allow-version-mismatch', description: 'allow client and cluster versions to differ' },
  ];
}

/** `-f` (required or not), `-R`, `--skip-empty`. */
export function fileOptions({ required }: { required: boolean }): OptionSpec[] {
  return [
    {
      flags: '-f, --filename <FILENAME>',
      description: 'file, directory (its .yaml/.yml/.json files) or - for stdin',
      required,
    },
    { flags: '-R, --recursive', description: 'walk directories given with -f recursively' },
    { flags: '--skip-empty', description: 'do not fail on files or directories without resources' },
  ];
}

/** `--allow-version-mismatch` on a command that never contacts the cluster for it. */
export function acceptedMismatchFlag(why: string): OptionSpec {
  return { flags: '--allow-version-mismatch', description: `accepted for compatibility; ${why}` };
}
