/**
 * `completion bash|zsh`: a shell completion script for the command tree, its flags and the kind
 * names (pure text; source it or put it in the shell's completion directory).
 */
import { CtlError } from '../errors.js';
import { kindNames } from '../kinds.js';
import type { CommandContext } from './context.js';

/**
 * Subcommand → its flags, as the completion scripts offer them. Kept in step with the options each
 * command declares in cli/*.ts (cli.test.ts checks every flag here is one its command takes).
 */
export const COMMAND_FLAGS: Record<string, readonly string[]> = {
  create: [
    '-f',
    '--filename',
    '-R',
    '--recursive',
    '--skip-empty',
    '--skip-exists',
    '-c',
    '--config',
    '-n',
    '--namespace',
    '--context',
    '--allow-version-mismatch',
  ],
  replace: [
    '-f',
    '--filename',
    '-R',
    '--recursive',
    '--skip-empty',
    '-c',
    '--config',
    '-n',
    '--namespace',
    '--context',
    '--allow-version-mismatch',
  ],
  apply: [
    '-f',
    '--filename',
    '-R',
    '--recursive',
    '--skip-empty',
    '-c',
    '--config',
    '-n',
    '--namespace',
    '--context',
    '--allow-version-mismatch',
  ],
  patch: [
    '-p',
    '--patch',
    '-t',
    '--type',
    '-c',
    '--config',
    '-n',
    '--namespace',
    '--context',
    '--allow-version-mismatch',
  ],
  delete: [
    '-f',
    '--filename',
    '-R',
    '--recursive',
    '--skip-empty',
    '-s',
    '--skip-not-exists',
    '-c',
    '--config',
    '-n',
    '--namespace',
    '--context',
    '--allow-version-mismatch',
  ],
  get: [
    '-f',
    '--filename',
    '-R',
    '--recursive',
    '--skip-empty',
    '-o',
    '--output',
    '-c',
    '--config',
    '-n',
    '--namespace',
    '-A',
    '--all-namespaces',
    '--export',
    '--context',
    '--allow-version-mismatch',
  ],
  label: [
    '--overwrite',
    '--remove',
    '-c',
    '--config',
    '-n',
    '--namespace',
    '--context',
    '--allow-version-mismatch',
  ],
  validate: ['-f', '--filename', '-R', '--recursive', '--skip-empty', '--allow-version-mismatch'],
  version: ['-c', '--config', '--poll', '--allow-version-mismatch'],
  datastore: ['migrate'],
  completion: ['bash', 'zsh'],
  ipam: ['show', 'check', 'release', 'configure'],
  node: ['status', 'checksystem'],
};

const TAKES_KIND = ['get', 'delete', 'patch', 'label'];
const MIGRATE = ['export', 'import', 'lock', 'unlock'];
const OUTPUTS = ['ps', 'wide', 'yaml', 'json', 'custom-columns=', 'go-template=', 'go-template-file='];

function bashScript(): string {
  const cases = Object.entries(COMMAND_FLAGS)
    .map(([cmd, flags]) => `    ${cmd}) flags="${flags.join(' ')}" ;;`)
    .join('\n');
  return `# bash completion for calicoctl                            -*- shell-script -*-
# Load with: source <(calicoctl completion bash)
_calicoctl() {
  local cur prev cmd flags i
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  cmd=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in
      -*) ;;
      *) cmd="\${COMP_WORDS[i]}"; break ;;
    esac
  done
  if [[ -z "$cmd" ]]; then
    COMPREPLY=($(compgen -W "${Object.keys(COMMAND_FLAGS).join(' ')} -l --log-level --context --allow-version-mismatch -h --help" -- "$cur"))
    return
  fi
  case "$prev" in
    -f|--filename|-c|--config) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    -o|--output) COMPREPLY=($(compgen -W "${OUTPUTS.join(' ')}" -- "$cur")); return ;;
    migrate) COMPREPLY=($(compgen -W "${MIGRATE.join(' ')}" -- "$cur")); return ;;
  esac
  case "$cmd" in
${cases}
    *) flags="" ;;
  esac
  if [[ "$cur" != -* ]] && [[ " ${TAKES_KIND.join(' ')} " == *" $cmd "* ]] && [[ "$prev" == "$cmd" ]]; then
    COMPREPLY=($(compgen -W "${kindNames().join(' ')}" -- "$cur"))
    return
  fi
  COMPREPLY=($(compgen -W "$flags -h --help" -- "$cur"))
}
complete -o default -F _calicoctl calicoctl
`;
}

function zshScript(): string {
  const cmds = Object.keys(COMMAND_FLAGS);
  const cases = Object.entries(COMMAND_FLAGS)
    .map(([cmd, flags]) => `    ${cmd}) _values -w 'flag' ${flags.map((f) => `'${f}'`).join(' ')} ;;`)
    .join('\n');
  return `#compdef calicoctl
# zsh completion for calicoctl. Load with: source <(calicoctl completion zsh)
_calicoctl() {
  local -a commands kinds
  commands=(${cmds.map((c) => `'${c}'`).join(' ')})
  kinds=(${kindNames().join(' ')})
  if (( CURRENT == 2 )); then
    _describe 'command' commands
    return
  fi
  local cmd=\${words[2]}
  if (( CURRENT == 3 )) && [[ " ${TAKES_KIND.join(' ')} " == *" $cmd "* ]] && [[ \${words[CURRENT]} != -* ]]; then
    _describe 'kind' kinds
    return
  fi
  if [[ $cmd == datastore ]]; then
    if (( CURRENT == 3 )); then _values 'subcommand' migrate; return; fi
    if (( CURRENT == 4 )); then _values 'action' ${MIGRATE.join(' ')}; return; fi
  fi
  case $cmd in
${cases}
  esac
}
if [[ "\${funcstack[1]}" == "_calicoctl" ]]; then _calicoctl "$@"; else compdef _calicoctl calicoctl; fi
`;
}

export function completionCommand(shell: string, ctx: CommandContext): number {
  switch (shell) {
    case 'bash':
      ctx.io.stdout(bashScript());
      return 0;
    case 'zsh':
      ctx.io.stdout(zshScript());
      return 0;
    default:
      throw new CtlError('usage', `unsupported shell ${JSON.stringify(shell)}: use bash or zsh`);
  }
}
