/**
 * What a `--kubelet` lab gives the cluster for the platform the operator's values name, before
 * `helm install` (I/O; what is written is other-cni.ts and helm-values.ts):
 *
 *   EKS (the pods' CNI is the Amazon VPC CNI's): every Node's spec.podCIDR (kube-controller-manager
 *     allocates it at registration) ─► the node's lab-eni conflist, the plugin's wrapper and the
 *     reference host-local and loopback in its CNI directories ─► the fabric routes each range to
 *     its node (the VPC's route table). kubelet then reports the Nodes Ready, as on EKS before
 *     Calico is installed.
 *   AKS: every Node labelled `kubernetes.azure.com/cluster=<lab>`, as AKS labels its nodes (the
 *     operator's Typha affinity on AKS requires it).
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { errorMessage, LabError } from '../errors.js';
import type { LabPlan } from '../plan.js';
import { HOST_LOCAL, programPath } from '../prereqs.js';
import { PLUGIN_TYPE } from './eni-cni.js';
import {
  type ClusterNeeds,
  isPreset,
  type LabValues,
  labOperatorValues,
  PRESET_FILES,
} from './helm-values.js';
import { ENI_CONFLIST, eniConflist, eniWrapper, nodePodCidrs, REFERENCE_PLUGINS } from './other-cni.js';
import type { ClusterNodePaths } from './plan.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What of the cluster builder the steps use. */
export interface ClusterHost {
  readonly plan: LabPlan;
  kubectl(args: string[], input?: string): Promise<{ status: number; stdout: string; stderr: string }>;
  paths(name: string): ClusterNodePaths;
  step(message: string): void;
  cloudRoutes(routed: readonly { podCidr: string; ip: string }[]): Promise<void>;
}

/** The node's own directory bound over `target` in its mount namespace. */
function hostDir(p: ClusterNodePaths, target: string): string {
  const d = p.hostPaths.find((h) => h.target === target);
  if (!d) throw new LabError('setup', `internal: a node has no directory for ${target}`);
  return d.source;
}

/** Until every Node has its podCIDR; name → range. */
async function podCidrs(c: ClusterHost, timeoutMs = 60_000): Promise<Map<string, string>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const r = await c.kubectl(['get', 'nodes', '-o', 'json']);
    const m = r.status === 0 ? nodePodCidrs(JSON.parse(r.stdout)) : new Map<string, string>();
    const missing = c.plan.nodes.filter((n) => !m.has(n.name)).map((n) => n.name);
    if (missing.length === 0) return m;
    if (Date.now() > end)
      throw new LabError(
        'setup',
        `Nodes ${missing.join(', ')} have no spec.podCIDR after ${timeoutMs / 1000} s (kube-controller-manager allocates them)`,
      );
    await sleep(500);
  }
}

/** The lab-eni CNI on every node, and the fabric's routes to each node's range. */
export async function installEniCni(c: ClusterHost): Promise<void> {
  const ranges = await podCidrs(c);
  const program = join(dirname(fileURLToPath(import.meta.url)), 'eni-cni-main.js');
  if (!existsSync(program))
    throw new LabError(
      'setup',
      `the lab-eni plugin is not built (${program}); run pnpm --filter @calico-ts/lab build`,
    );
  const hostLocal = programPath(HOST_LOCAL.name);
  if (!existsSync(hostLocal))
    throw new LabError(
      'prerequisite',
      `the pods' CNI needs the reference host-local plugin (${HOST_LOCAL.paths.join(' or ')}; Debian package ${HOST_LOCAL.debianPackage})`,
    );
  for (const node of c.plan.nodes) {
    const p = c.paths(node.name);
    const bin = hostDir(p, '/opt/cni/bin');
    const netd = hostDir(p, '/etc/cni/net.d');
    mkdirSync(bin, { recursive: true });
    mkdirSync(netd, { recursive: true });
    const wrapper = join(bin, PLUGIN_TYPE);
    writeFileSync(wrapper, eniWrapper(process.execPath, program));
    chmodSync(wrapper, 0o755);
    for (const name of REFERENCE_PLUGINS) {
      const link = join(bin, name);
      if (existsSync(link)) unlinkSync(link);
      symlinkSync(join(dirname(hostLocal), name), link);
    }
    const conf = eniConflist(ranges.get(node.name)!, join(p.dir, 'host-local'));
    writeFileSync(join(netd, ENI_CONFLIST), `${JSON.stringify(conf, null, 2)}\n`);
  }
  c.step(
    `the pods' CNI (lab-eni, as the Amazon VPC CNI: eni… interfaces, host-local): ${c.plan.nodes
      .map((n) => `${n.name} ${ranges.get(n.name)}`)
      .join(', ')}`,
  );
  await c.cloudRoutes(c.plan.nodes.map((n) => ({ podCidr: ranges.get(n.name)!, ip: n.ip })));
}

/** AKS' node label on every Node. */
export async function labelAksNodes(c: ClusterHost): Promise<void> {
  const label = `kubernetes.azure.com/cluster=${c.plan.name}`;
  const r = await c.kubectl(['label', 'nodes', '--all', '--overwrite', label]);
  if (r.status !== 0)
    throw new LabError('setup', `kubectl label nodes --all ${label} failed: ${r.stderr.trim()}`);
  c.step(`Nodes labelled ${label}, as AKS labels its nodes`);
}

export async function provideForPlatform(c: ClusterHost, needs: ClusterNeeds): Promise<void> {
  if (needs.eniCni) await installEniCni(c);
  if (needs.aksNodeLabel) await labelAksNodes(c);
}

/** `--helm-values`: the file read (a preset from the repository) and made the lab's; undefined without. */
export function readLabValues(plan: LabPlan, repoRoot: string): LabValues | undefined {
  const arg = plan.cluster?.helmValues;
  if (arg === undefined) return undefined;
  const file = isPreset(arg) ? join(repoRoot, PRESET_FILES[arg]) : arg;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new LabError('usage', `--helm-values ${arg}: ${file} cannot be read: ${errorMessage(e)}`);
  }
  return labOperatorValues(text, arg, isPreset(arg));
}

/** `--helm-values FILE` made absolute from where `pnpm lab` was run (pnpm's INIT_CWD); presets as they are. */
export function helmValuesPath(arg: string): string {
  return isPreset(arg) ? arg : resolve(process.env.INIT_CWD ?? process.cwd(), arg);
}
