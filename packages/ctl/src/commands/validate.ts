/**
 * `validate -f …`: decode and validate offline, never touching a datastore.
 */
import type { CommandContext } from './context.js';
import { type FileArgs, loadResources, singleKind } from './load.js';

export async function validateCommand(args: FileArgs, ctx: CommandContext): Promise<number> {
  const resources = await loadResources('validate', args, ctx);
  if (resources.length === 0) {
    ctx.io.stdout('No resources specified\n');
    return 0;
  }
  const kind = singleKind(resources);
  ctx.io.stdout(
    kind
      ? `Successfully validated ${resources.length} '${kind}' resource(s)\n`
      : `Successfully validated ${resources.length} resource(s)\n`,
  );
  return 0;
}
