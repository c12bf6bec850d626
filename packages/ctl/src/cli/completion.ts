/**
 * `calicoctl completion bash|zsh`: its usage and run (the script: commands/completion.ts, whose
 * flag table mirrors the options declared in this folder; cli.test.ts checks they agree).
 */
import { leaf } from './command.js';

export const completion = leaf<[string], Record<string, never>>({
  name: 'completion',
  usage: {
    description: 'Print a shell completion script (bash or zsh).',
    arguments: [{ name: '<SHELL>' }],
  },
  run: async ({ args: [shell] }, session) => {
    const { completionCommand } = await import('../commands/completion.js');
    return completionCommand(shell, session.ctx());
  },
});
