/**
 * `cluster diags`: a bundle of the cluster's Calico state for support, from wherever calicoctl
 * runs with access to the cluster. The Calico resources come through the datastore (etcd or
 * Kubernetes), the Kubernetes view and the pods' logs through `kubectl` (the configuration's
 * kubeconfig, else kubectl's own default). One part that cannot be had (no kubectl, no access,
 * a node whose kubelet does not answer) is recorded in its file and never ends the collection.
 * The bundle is a .tar.gz, readable by its owner only, in a new directory under the temp dir.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { KINDS, type Kind } from '@calico-ts/api';
import type { Datastore } from '@calico-ts/datastore';
import {
  CALICO_COMPONENTS,
  calicoPods,
  choosePodsForLogs,
  clusterBundleName,
  KUBECTL_DUMPS,
  logArgs,
  parseFocusNodes,
  parseMaxLogs,
  parseSince,
} from '../cluster/diags.js';
import type { CommandOutcome } from '../node/diags.js';
import { type TarEntry, tarArchive } from '../node/tar.js';
import type { CommandContext } from './context.js';
import { getCommand } from './get.js';
import { runCommand } from './node-diags.js';

export interface ClusterDiagsArgs {
  since?: string;
  maxLogs: string;
  focusNodes?: string;
}

export interface ClusterDiagsDeps {
  datastore: Datastore;
  /** The kubeconfig for kubectl; without it kubectl finds its own (KUBECONFIG, ~/.kube/config). */
  kubeconfig?: string | undefined;
  /** The kubectl program (default `kubectl` from PATH). */
  kubectl?: string;
  /** Runs a program (tests may record); default: with a deadline, never rejecting. */
  run?: (argv: readonly string[]) => Promise<CommandOutcome>;
}

function failureText(argv: readonly string[], o: CommandOutcome): string {
  if (o.error !== undefined) return `not collected: ${argv.join(' ')}: ${o.error}\n`;
  return `${o.stdout}${o.stdout === '' ? '' : '\n'}--- not collected: ${argv.join(' ')} exited ${o.code ?? 'on a signal'}: ${o.stderr.trim()}\n`;
}

/** Every resource of `kind`, as `calicoctl get <kind> -o yaml` prints it (all namespaces). */
async function resourcesYaml(kind: Kind, ds: Datastore, ctx: CommandContext): Promise<string> {
  let out = '';
  let err = '';
  const io = {
    ...ctx.io,
    stdout: (t: string) => {
      out += t;
    },
    stderr: (t: string) => {
      err += t;
    },
  };
  try {
    const code = await getCommand(
      {
        kind: KINDS[kind].plural,
        output: 'yaml',
        ...(KINDS[kind].namespaced ? { allNamespaces: true } : {}),
      },
      ds,
      { ...ctx, io },
    );
    if (code !== 0) return `${out}--- not collected: exit ${code}: ${err.trim()}\n`;
    return out;
  } catch (e) {
    return `not collected: ${e instanceof Error ? e.message : String(e)}\n`;
  }
}

export async function clusterDiagsCommand(
  args: ClusterDiagsArgs,
  deps: ClusterDiagsDeps,
  ctx: CommandContext,
): Promise<number> {
  const since = args.since === undefined ? undefined : parseSince(args.since);
  const maxLogs = parseMaxLogs(args.maxLogs);
  const focus = parseFocusNodes(args.focusNodes);
  const run = deps.run ?? runCommand;
  const kubectl = [deps.kubectl ?? 'kubectl', ...(deps.kubeconfig ? ['--kubeconfig', deps.kubeconfig] : [])];

  const now = new Date();
  const mtime = Math.floor(now.getTime() / 1000);
  const entries: TarEntry[] = [];
  const add = (name: string, data: string) => entries.push({ name, data: Buffer.from(data), mtime });
  const say = (line: string) => ctx.io.stdout(`${line}\n`);

  say('Collecting cluster diagnostics');
  say('Dumping Calico resources');
  for (const kind of Object.keys(KINDS) as Kind[]) {
    add(`calico/${KINDS[kind].plural}.yaml`, await resourcesYaml(kind, deps.datastore, ctx));
  }

  let kubectlUsable = true;
  for (const d of KUBECTL_DUMPS) {
    const argv = [...kubectl, ...d.args];
    if (!kubectlUsable) {
      add(`kubernetes/${d.file}`, `not collected: ${argv.join(' ')}: kubectl not installed\n`);
      continue;
    }
    say(`Dumping ${d.title}`);
    const o = await run(argv);
    if (o.error === 'not installed') {
      kubectlUsable = false;
      say(
        `kubectl (${kubectl[0]}) is not installed: the Kubernetes part and the pods' logs are not collected`,
      );
    }
    add(`kubernetes/${d.file}`, o.code === 0 ? o.stdout : failureText(argv, o));
  }

  if (kubectlUsable && maxLogs > 0) {
    const selector = `k8s-app in (${CALICO_COMPONENTS.join(',')})`;
    const argv = [...kubectl, 'get', 'pods', '--all-namespaces', '-l', selector, '-o', 'json'];
    const listed = await run(argv);
    let pods: ReturnType<typeof calicoPods> = [];
    if (listed.code === 0) {
      try {
        pods = calicoPods(JSON.parse(listed.stdout));
      } catch (e) {
        add('logs/not-collected', `${argv.join(' ')}: unreadable output: ${(e as Error).message}\n`);
      }
    } else {
      add('logs/not-collected', failureText(argv, listed));
    }
    const chosen = choosePodsForLogs(pods, focus, maxLogs);
    say(`Collecting logs of ${chosen.length} Calico pods (at most ${maxLogs} of each component)`);
    for (const p of chosen) {
      const logArgv = [...kubectl, ...logArgs(p, since)];
      const o = await run(logArgv);
      add(`logs/${p.namespace}/${p.name}.log`, o.code === 0 ? o.stdout : failureText(logArgv, o));
    }
  }

  const dir = await mkdtemp(join(tmpdir(), 'calico-cluster-diags'));
  const file = join(dir, clusterBundleName(now));
  await writeFile(file, gzipSync(tarArchive(entries)), { mode: 0o600 });
  say(`\nDiags saved to ${file}`);
  return 0;
}
