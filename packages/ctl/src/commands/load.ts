/**
 * The shared front half of every `-f` command: read, decode, convert, check and validate all
 * documents, print conversion notes on stderr, and stop with every problem listed before anything
 * is written.
 */
import { CtlError } from '../errors.js';
import {
  formatProblems,
  type PreparedResource,
  prepareDocuments,
  type ResourceAction,
} from '../resources/prepare.js';
import { readDocuments } from '../resources/read-documents.js';
import type { CommandContext } from './context.js';

export interface FileArgs {
  filename: string;
  recursive?: boolean;
  skipEmpty?: boolean;
  namespace?: string;
  allNamespaces?: boolean;
}

export async function loadResources(
  action: ResourceAction,
  args: FileArgs,
  ctx: CommandContext,
): Promise<PreparedResource[]> {
  let docs: Awaited<ReturnType<typeof readDocuments>>;
  try {
    docs = await readDocuments(
      args.filename,
      { recursive: args.recursive ?? false, skipEmpty: args.skipEmpty ?? false },
      ctx.io,
    );
  } catch (e) {
    if (e instanceof CtlError && e.code === 'invalid-input') {
      throw new CtlError('invalid-input', `${failurePrefix(action)}: ${e.message}`, { cause: e });
    }
    throw e;
  }
  const prepared = prepareDocuments(docs, {
    action,
    namespace: args.namespace,
    allNamespaces: args.allNamespaces,
  });
  for (const note of prepared.notes) ctx.io.stderr(`${note}\n`);
  if (prepared.problems.length > 0) {
    const total = prepared.resources.length + prepared.problems.length;
    throw new CtlError(
      'invalid-input',
      `${failurePrefix(action)}: ${formatProblems(prepared.problems, total)}`,
    );
  }
  ctx.log.info(`Loaded ${prepared.resources.length} resource(s) from ${args.filename}`);
  return prepared.resources;
}

function failurePrefix(action: ResourceAction): string {
  return action === 'validate' ? 'failed to execute command' : 'Failed to execute command';
}

/** The one kind all resources share, or '' when they are of several kinds (upstream's SingleKind). */
export function singleKind(resources: readonly { kind: string }[]): string {
  const kinds = new Set(resources.map((r) => r.kind));
  return kinds.size === 1 ? [...kinds][0]! : '';
}

/** Go's `%v` of a []error: `[first second]`. */
export function errorList(errors: readonly Error[]): string {
  return `[${errors.map((e) => e.message).join(' ')}]`;
}
