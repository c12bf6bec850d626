import {
  type CommandResult,
  type CommandRunner,
  commandLine,
  type RunOptions,
} from '../exec/command-runner.js';

/** One call seen by {@link ScriptedCommandRunner}. */
export interface RecordedCall {
  cmd: string;
  args: string[];
  netns?: string;
  input?: string;
  /** The argv the real runner would execute (`ip -n ns …`, `nsenter --net=… …`). */
  argv: string[];
}

/** What a scripted call answers; fields left out mean success with no output. */
export type ScriptedReply = Partial<CommandResult>;

export type ScriptHandler = (call: RecordedCall) => ScriptedReply | undefined;

/**
 * A {@link CommandRunner} that runs nothing: it records every call and answers from a handler
 * (default: success, empty output). For unit tests of argument building and output parsing.
 */
export class ScriptedCommandRunner implements CommandRunner {
  readonly calls: RecordedCall[] = [];
  #handler: ScriptHandler;

  constructor(handler: ScriptHandler = () => undefined) {
    this.#handler = handler;
  }

  /** Replaces the handler for the calls that follow. */
  onCall(handler: ScriptHandler): void {
    this.#handler = handler;
  }

  async run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<CommandResult> {
    const call: RecordedCall = { cmd, args: [...args], argv: commandLine(cmd, args, opts.netns) };
    if (opts.netns !== undefined) call.netns = opts.netns;
    if (opts.input !== undefined) call.input = opts.input;
    this.calls.push(call);
    const reply = this.#handler(call) ?? {};
    return { exitCode: reply.exitCode ?? 0, stdout: reply.stdout ?? '', stderr: reply.stderr ?? '' };
  }

  /** The executed argv of every call, joined by spaces: easy to compare in a test. */
  commandLines(): string[] {
    return this.calls.map((c) => c.argv.join(' '));
  }
}
