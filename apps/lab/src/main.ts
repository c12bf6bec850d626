/**
 * `pnpm lab <command>`: parse, then run one command. Errors print one message saying what to do
 * and exit 1 (2 for usage).
 *
 * Commands that talk to the lab's API server or datastore (ns create, pod create, pod delete,
 * bench) re-run themselves inside the lab's etcd namespace (`nsenter --net`), the only place
 * besides the nodes that reaches etcd and the API server: the host's own namespace never does.
 * calicoctl and kubectl are run there the same way.
 */
import { spawnSync } from 'node:child_process';
import { imageRef } from '@calico-ts/images/definitions';
import { labBench, renderBench } from './bench.js';
import { type LabArgs, type LabCommand, parseLabArgs, usageText } from './cli.js';
import { helmValuesPath } from './cluster/provider-setup.js';
import { clusterStatus, renderClusterStatus } from './cluster/status.js';
import { labUpCluster } from './cluster/up.js';
import {
  clusterNsCreate,
  clusterPodCreate,
  clusterPodDelete,
  clusterPodExecArgs,
} from './cluster/workloads.js';
import { labImages } from './containers.js';
import { labDown } from './down.js';
import { errorMessage, exitStatusOf, LabError } from './errors.js';
import { kubectlEnv, runKubectl } from './kube.js';
import { labStatus, measureConnectivity, renderStatus } from './observe.js';
import { kubePlanOf, labFamilies, planLab, stateDirOf } from './plan.js';
import { artifacts, checkRoot, kubectlPath } from './prereqs.js';
import { labInterfacePrefix } from './program-config.js';
import { Progress } from './progress.js';
import { connectivityMatrix } from './render.js';
import { type LabState, requireState, withLock } from './state.js';
import { labUp, nsenter, restartApiServer } from './up.js';
import { nsCreate, podCreate, podDelete, requirePod } from './workloads.js';

const INSIDE = 'CALICO_LAB_INSIDE_NETNS';

function needsDatastore(c: LabCommand): boolean {
  return c.kind === 'ns-create' || c.kind === 'pod-create' || c.kind === 'bench' || c.kind === 'pod-delete';
}

/** Re-runs this very command inside the lab's etcd namespace; resolves to its exit status. */
function reenter(state: LabState): number {
  const r = spawnSync(
    'nsenter',
    [
      `--net=/run/netns/${state.plan.etcdNetns}`,
      process.execPath,
      ...process.execArgv,
      ...process.argv.slice(1),
    ],
    { stdio: 'inherit', env: { ...process.env, [INSIDE]: state.plan.etcdNetns } },
  );
  if (r.error)
    throw new LabError('command', `cannot enter ${state.plan.etcdNetns}: ${errorMessage(r.error)}`);
  return r.status ?? 1;
}

/** Subcommands of calicoctl that take `--config`. */
const CONFIG_COMMANDS = new Set([
  'create',
  'apply',
  'replace',
  'delete',
  'get',
  'patch',
  'label',
  'ipam',
  'version',
  'datastore',
]);

function calicoctl(state: LabState, argv: readonly string[]): number {
  const arts = artifacts();
  const sub = argv.find((a) => !a.startsWith('-'));
  const hasConfig = argv.some((a) => a === '-c' || a === '--config' || a.startsWith('--config='));
  const args =
    sub && CONFIG_COMMANDS.has(sub) && !hasConfig ? [...argv, '--config', state.plan.calicoctlConfig] : argv;
  // Endpoints shown with the pods' interface names, as calico-node reads them (policy-only: eni…).
  const prefix = labInterfacePrefix(state.plan);
  const r = spawnSync(
    nsenter(state.plan.etcdNetns)[0]!,
    [...nsenter(state.plan.etcdNetns).slice(1), arts.calicoctl, ...args],
    {
      stdio: 'inherit',
      ...(prefix !== undefined ? { env: { ...process.env, FELIX_INTERFACEPREFIX: prefix } } : {}),
    },
  );
  if (r.error) throw new LabError('command', `cannot run calicoctl: ${errorMessage(r.error)}`);
  return r.status ?? 1;
}

/** The machine's kubectl inside the etcd namespace, on the lab's admin kubeconfig. */
function kubectl(state: LabState, argv: readonly string[]): number {
  const kube = kubePlanOf(state.plan, '`lab kubectl`');
  const r = spawnSync('nsenter', [`--net=/run/netns/${state.plan.etcdNetns}`, kubectlPath(), ...argv], {
    stdio: 'inherit',
    env: kubectlEnv(kube, process.env),
  });
  if (r.error) throw new LabError('command', `cannot run kubectl: ${errorMessage(r.error)}`);
  return r.status ?? 1;
}

/**
 * A `--kubelet` lab's own answer to the pod-level commands: through the API server, as on any
 * cluster (cluster/workloads.ts). Undefined for the commands both kinds of lab run alike.
 */
async function runOnCluster(state: LabState, cmd: LabCommand, out: Progress): Promise<number | undefined> {
  switch (cmd.kind) {
    case 'ns-create':
      await clusterNsCreate(state, cmd.namespace, cmd.labels, out);
      return 0;
    case 'pod-create':
      await clusterPodCreate(
        state,
        {
          namespace: cmd.namespace,
          name: cmd.name,
          ...(cmd.node ? { node: cmd.node } : {}),
          labels: cmd.labels,
          annotations: cmd.annotations,
          ...(cmd.serviceAccount ? { serviceAccount: cmd.serviceAccount } : {}),
          ports: cmd.ports,
        },
        out,
      );
      return 0;
    case 'pod-delete':
      await clusterPodDelete(state, cmd.namespace, cmd.name, out);
      return 0;
    case 'pod-exec':
      return kubectl(state, clusterPodExecArgs(cmd.namespace, cmd.name, cmd.argv));
    case 'connectivity':
    case 'bench':
      throw new LabError(
        'usage',
        `\`lab ${cmd.kind}\` runs on the lighter lab (without --kubelet); on this cluster use ` +
          '`pnpm lab kubectl exec` (the httpd image has nc, ping, iperf3, ab) or bench/kubelet',
      );
    default:
      return undefined;
  }
}

async function run(args: LabArgs): Promise<number> {
  const cmd = args.command;
  if (cmd.kind === 'help') {
    process.stdout.write(usageText(cmd.topic));
    return 0;
  }
  const stateDir = args.stateDir ?? stateDirOf(args.name);
  const out = new Progress();
  const arts = artifacts();
  switch (cmd.kind) {
    case 'up': {
      const plan = planLab({
        name: args.name,
        nodes: cmd.nodes,
        mode: cmd.mode,
        datastore: cmd.datastore,
        topology: cmd.topology,
        ipFamily: cmd.ipFamily,
        ...(cmd.tls ? { tls: true } : {}),
        ...(cmd.typha ? { typha: true } : {}),
        stateDir,
        ...(cmd.images ? { images: labImages(imageRef) } : {}),
        ...(cmd.kubelet ? { kubelet: cmd.kubelet } : {}),
        ...(cmd.helmValues !== undefined ? { helmValues: helmValuesPath(cmd.helmValues) } : {}),
      });
      if (plan.cluster) await labUpCluster(plan, arts, out);
      else await labUp(plan, arts, out);
      return 0;
    }
    case 'down':
      checkRoot();
      await labDown(stateDir, args.name, out);
      return 0;
    default:
      break;
  }
  checkRoot();
  const state = requireState(stateDir, args.name);
  if (state.plan.cluster) {
    const handled = await runOnCluster(state, cmd, out);
    if (handled !== undefined) return handled;
  }
  if (needsDatastore(cmd) && process.env[INSIDE] !== state.plan.etcdNetns) return reenter(state);
  switch (cmd.kind) {
    case 'status': {
      if (state.plan.cluster) {
        const kubectl = kubectlPath();
        const s = await clusterStatus(state, (a) =>
          runKubectl(state.plan, kubectl, a, { timeoutMs: 15_000 }),
        );
        process.stdout.write(
          cmd.output === 'json' ? `${JSON.stringify(s, null, 2)}\n` : `${renderClusterStatus(s)}\n`,
        );
        return 0;
      }
      const s = await labStatus(state, arts);
      process.stdout.write(
        cmd.output === 'json' ? `${JSON.stringify(s, null, 2)}\n` : `${renderStatus(s)}\n`,
      );
      return 0;
    }
    case 'ns-create':
      await withLock(stateDir, async () =>
        nsCreate(requireState(stateDir, args.name), cmd.namespace, cmd.labels, out),
      );
      return 0;
    case 'pod-create':
      await withLock(stateDir, async () => podCreate(requireState(stateDir, args.name), arts, cmd, out));
      return 0;
    case 'pod-delete':
      await withLock(stateDir, async () =>
        podDelete(requireState(stateDir, args.name), cmd.namespace, cmd.name, out),
      );
      return 0;
    case 'pod-exec': {
      const pod = requirePod(state, cmd.namespace, cmd.name);
      const r = spawnSync('nsenter', [`--net=/run/netns/${pod.netns}`, ...cmd.argv], { stdio: 'inherit' });
      if (r.error) throw new LabError('command', `cannot run ${cmd.argv[0]}: ${errorMessage(r.error)}`);
      return r.status ?? 1;
    }
    case 'restart':
      await withLock(stateDir, async () => restartApiServer(requireState(stateDir, args.name), arts, out));
      return 0;
    case 'calicoctl':
      return calicoctl(state, cmd.argv);
    case 'kubectl':
      return kubectl(state, cmd.argv);
    case 'bench': {
      const progress = cmd.output === 'json' ? new Progress(() => {}) : out;
      const report = await withLock(stateDir, async () =>
        labBench(requireState(stateDir, args.name), arts, cmd.pods, progress),
      );
      process.stdout.write(`${renderBench(report, cmd.output)}\n`);
      return 0;
    }
    case 'connectivity': {
      const has = labFamilies(state.plan);
      const missing = cmd.families?.find((f) => !has.includes(f));
      if (missing !== undefined)
        throw new LabError(
          'usage',
          `--family ${missing}: the lab "${state.name}" has IPv${has.join(' and IPv')} pods only (lab up --ip-family)`,
        );
      const report = await measureConnectivity(state, arts, cmd);
      process.stdout.write(
        cmd.output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : `${connectivityMatrix(report)}\n`,
      );
      return 0;
    }
    default:
      throw new LabError('usage', `unhandled command ${(cmd as LabCommand).kind}`);
  }
}

async function main(): Promise<void> {
  let code: number;
  try {
    code = await run(parseLabArgs(process.argv.slice(2), process.env));
  } catch (e) {
    process.stderr.write(`lab: ${errorMessage(e)}\n`);
    code = exitStatusOf(e);
  }
  process.exit(code);
}

await main();
