/**
 * `lab up`'s first layer: the lab's state as it is built, its network namespaces, the fabric
 * bridge(s), the veths that attach etcd and the nodes to it, the nodes' addresses and routes, and
 * (policy-only) the cloud routes of the fabric. `ControlPlaneSteps` (up-control-plane.ts) and
 * `LabBuilder` (up.ts) build on it:
 *
 *   NetworkSteps ──► ControlPlaneSteps ──► LabBuilder
 *   (namespaces,      (etcd, certificates,   (CNI files, calico-node,
 *    fabric, routes)   API server, CRDs,      readiness; `labUp` runs
 *                      kube-controllers,      every step in order)
 *                      Typha)
 *
 * Each namespace is written to the state file before it is made, so a failed `lab up` removes
 * exactly what it made (tearDown). Also the helpers every step uses: `nsenter`, `logTail`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { Netlinux } from '@calico-ts/netlinux';
import { logLineText } from './containers.js';
import { LabError } from './errors.js';
import {
  BRIDGE,
  FABRIC_GATEWAY,
  FABRIC_GATEWAY6,
  type FabricSubnet,
  fabricSubnets,
  type KubePlan,
  kubePlanOf,
  type LabPlan,
  type NodePlan,
} from './plan.js';
import type { Artifacts, KubeTools } from './prereqs.js';
import type { Progress } from './progress.js';
import { type LabState, newState, writeState } from './state.js';

/** The PATH the lab's programs run with. */
export const PATH = process.env.PATH || '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function nsenter(netns: string): string[] {
  return ['nsenter', `--net=/run/netns/${netns}`];
}

/** `its log ends:` and the log's last lines, or that there is nothing in it. */
export function logTail(file: string | undefined, n = 8): string {
  const text = file && existsSync(file) ? readFileSync(file, 'utf8').trimEnd() : '';
  if (text === '') return `nothing in its log${file ? ` ${file}` : ''}`;
  return `its log ends:\n${text.split('\n').slice(-n).map(logLineText).join('\n')}`;
}

/** The pieces of `@calico-ts/datastore/testing` the lab's API server is made with. */
export type KubeKit = typeof import('@calico-ts/datastore/testing');

export class NetworkSteps {
  readonly net = new Netlinux();

  readonly state: LabState;

  constructor(
    readonly plan: LabPlan,
    readonly arts: Artifacts,
    readonly out: Progress,
    readonly kube?: { readonly tools: KubeTools; readonly kit: KubeKit },
  ) {
    this.state = newState(plan);
  }

  protected kubeParts(): { plan: KubePlan; tools: KubeTools; kit: KubeKit } {
    if (!this.kube) throw new LabError('setup', 'internal: a Kubernetes step without its tools');
    return { plan: kubePlanOf(this.plan, 'the API server'), ...this.kube };
  }

  save(): void {
    writeState(this.state);
  }

  /** Records the namespace, then makes it (a recorded name that was never made is harmless). */
  async addNetns(name: string): Promise<void> {
    this.state.namespaces.push(name);
    this.save();
    await this.net.createNetns(name);
    await this.net.setLinkUp('lo', name);
  }

  /** Records a container's name before it is started, so `lab down` removes it whatever happens. */
  recordContainer(name: string): void {
    (this.state as { containers?: string[] }).containers ??= [];
    this.state.containers!.push(name);
    this.save();
  }

  async fabric(): Promise<void> {
    const { plan, net } = this;
    await this.addNetns(plan.fabricNetns);
    const subnets = fabricSubnets(plan.topology);
    for (const s of subnets) {
      await net.createBridge({ name: s.bridge }, plan.fabricNetns);
      await net.addAddr(s.bridge, `${s.gateway}/24`, {}, plan.fabricNetns);
      // No duplicate address detection: an address is usable (BIRD binds it) at once.
      if (plan.ipFamily !== undefined && plan.ipFamily !== '4')
        await net.addAddr(s.bridge, `${FABRIC_GATEWAY6}/64`, { noDad: true }, plan.fabricNetns);
      await net.setLinkUp(s.bridge, plan.fabricNetns);
    }
    // Two subnets: the fabric namespace is the router between them.
    if (subnets.length > 1) await net.writeSysctl('net.ipv4.ip_forward', 1, plan.fabricNetns);
    this.out.step(
      `fabric: namespace ${plan.fabricNetns}, ${subnets.map((s) => `bridge ${s.bridge} ${s.gateway}/24`).join(', ')}` +
        `${plan.ipFamily !== undefined && plan.ipFamily !== '4' ? ` and ${FABRIC_GATEWAY6}/64` : ''}` +
        `${subnets.length > 1 ? ' routed between them' : ''} (not connected to the host)`,
    );
  }

  /** A veth from the fabric's `subnet` bridge to `netns`'s eth0 at `ip`, with a default route via its gateway. */
  async attach(
    netns: string,
    fabricIf: string,
    ip: string,
    defaultRoute: boolean,
    subnet: FabricSubnet = fabricSubnets()[0]!,
  ): Promise<void> {
    const { plan, net } = this;
    await net.createVethPair({ name: fabricIf, peerName: 'eth0', peerNetns: netns }, plan.fabricNetns);
    await net.setLink(fabricIf, { master: subnet.bridge, up: true }, plan.fabricNetns);
    await net.addAddr('eth0', `${ip}/24`, {}, netns);
    await net.setLinkUp('eth0', netns);
    if (defaultRoute) await net.addRoute({ dst: 'default', gateway: subnet.gateway, dev: 'eth0' }, netns);
  }

  async node(node: NodePlan): Promise<void> {
    await this.addNetns(node.netns);
    await this.attach(node.netns, node.fabricIf, node.ip, true, node.subnet);
    // A Kubernetes host forwards; pods' traffic crosses this namespace.
    await this.net.writeSysctl('net.ipv4.ip_forward', 1, node.netns);
    if (node.ip6 !== undefined) {
      await this.net.writeSysctls(
        [
          ['net.ipv6.conf.all.disable_ipv6', 0],
          ['net.ipv6.conf.all.forwarding', 1],
        ],
        node.netns,
      );
      await this.net.addAddr('eth0', `${node.ip6}/64`, { noDad: true }, node.netns);
      await this.net.addRoute({ dst: 'default', gateway: FABRIC_GATEWAY6, dev: 'eth0' }, node.netns);
    }
  }

  /**
   * policy-only: what a cloud's network does for a routed pod network: the fabric (the VPC's
   * router) forwards, and routes each node's pod range to that node. No redirects: the nodes are
   * to keep sending pod traffic to their gateway. The etcd namespace (the control plane's host)
   * routes the ranges to the fabric, as every host of a VPC reaches its pods: the API server answers
   * a pod's request to the `kubernetes` Service there. The ranges are the plan's (`--mode
   * policy-only`), or given (a `--kubelet` node's podCIDR, known once its Node is registered).
   */
  async cloudRoutes(
    routed: readonly { readonly podCidr: string; readonly ip: string }[] = this.plan.nodes.flatMap((n) =>
      n.podCidr !== undefined ? [{ podCidr: n.podCidr, ip: n.ip }] : [],
    ),
  ): Promise<void> {
    const { plan, net } = this;
    if (routed.length === 0) return;
    await net.writeSysctl('net.ipv4.ip_forward', 1, plan.fabricNetns);
    await net.writeSysctl('net.ipv4.conf.all.send_redirects', 0, plan.fabricNetns);
    await net.writeSysctl(`net.ipv4.conf.${BRIDGE}.send_redirects`, 0, plan.fabricNetns);
    for (const n of routed) {
      await net.addRoute({ dst: n.podCidr, gateway: n.ip, dev: BRIDGE }, plan.fabricNetns);
      await net.addRoute({ dst: n.podCidr, gateway: FABRIC_GATEWAY, dev: 'eth0' }, plan.etcdNetns);
    }
    this.out.step(
      `cloud routes in ${plan.fabricNetns}: ${routed.map((n) => `${n.podCidr} via ${n.ip}`).join(', ')}; ` +
        `in ${plan.etcdNetns} via ${FABRIC_GATEWAY}`,
    );
  }
}
