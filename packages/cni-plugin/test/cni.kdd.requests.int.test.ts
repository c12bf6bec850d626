/**
 * What a CNI ADD and a CNI DEL ask of the Kubernetes API server (`datastore_type: kubernetes`),
 * counted by kube-apiserver itself (`apiserver_request_total`, read before and after, by verb and
 * resource): the native executables against a real kube-apiserver with the Calico CRDs, on one
 * node run direct (every invocation in its own process, `service_socket: ""`) and on the other
 * handed to that node's plugin service (`calico --serve`), as calico-node runs it.
 *
 * The counts asserted are the steady state, the ADDs a node makes every day: its block is claimed
 * and has room (a warm-up pod on each node claims it first, and stays), the Pod exists, bound to
 * the node, and the service has seen the node once. A node's first ADD, which claims a block,
 * costs its claim on top (see docs/design-notes.md). Counts, not times: a request more per ADD
 * fails here whatever the machine's load.
 */
process.env.CALICO_TEST_EXECUTABLE ??= 'native';

import { join } from 'node:path';
import {
  type ApiRequestCounts,
  missingKubePrerequisites,
  readApiRequestCounts,
  requestsBetween,
} from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRDS, Lab, type NodeNs } from './lab.js';

const { buildPlugins, pluginDir, pluginFile, removePlugins, VARIANT } = await import(
  './plugin-executable.js'
);

const CALICO = join(pluginDir, 'calico');
const NS = 'kdd-count';
/** ADDs (and then DELs) per side; each count is the total over them divided by this. */
const N = 4;

const missing = missingKubePrerequisites({ root: true, crds: CRDS, tools: ['ip', 'nsenter'] });
if (missing.length > 0) {
  describe(`CNI requests on the Kubernetes datastore (${VARIANT})`, () => {
    it.skipIf(process.env.CI !== 'true')('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

/**
 * The API server's own housekeeping, which runs on its timers whatever the plugin does: its
 * identity and lease renewals and the `kubernetes` Service's endpoints. Everything else counts.
 */
const HOUSEKEEPING = /^\S+ (leases|endpoints|endpointslices)$/;
const counted = (key: string) => !HOUSEKEEPING.test(key);

describe.skipIf(missing.length > 0)(`CNI requests on the Kubernetes datastore (${VARIANT})`, () => {
  const lab = new Lab();
  let services: { stop(): Promise<string[]> } | undefined;
  let seq = 0;

  beforeAll(async () => {
    await buildPlugins();
    await lab.start(2, 'kubernetes');
    await lab.seed();
    await lab.kubectl(['create', 'namespace', NS]);
    services = await lab.startServices(pluginFile);
  }, 180_000);

  afterAll(async () => {
    await services?.stop();
    await lab.close();
    await removePlugins();
  }, 60_000);

  function conf(node: NodeNs, viaService: boolean): string {
    return JSON.stringify({
      cniVersion: '1.0.0',
      name: 'k8s-pod-network',
      type: 'calico',
      log_level: 'warning',
      ...lab.kubeConf(),
      ipam: { type: 'calico-ipam' },
      policy: { type: 'k8s' },
      nodename_file: node.nodenameFile,
      ipam_lock_file: node.lockFile,
      service_socket: viaService ? node.serviceSocket : '',
    });
  }

  function env(command: string, cid: string, netns: string, pod: string) {
    return {
      CNI_COMMAND: command,
      CNI_CONTAINERID: cid,
      CNI_NETNS: netns,
      CNI_IFNAME: 'eth0',
      CNI_PATH: pluginDir,
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${NS};K8S_POD_NAME=${pod};K8S_POD_INFRA_CONTAINER_ID=${cid}`,
    };
  }

  interface Pod {
    name: string;
    cid: string;
    netns: string;
  }

  /** Pods bound to `node` as the scheduler leaves them for the kubelet, with their namespaces. */
  async function pods(node: NodeNs, count: number): Promise<Pod[]> {
    const out: Pod[] = [];
    for (let i = 0; i < count; i++) {
      const name = `count-${++seq}`;
      await lab.ensurePod(NS, name, node);
      out.push({
        name,
        cid: `c0a7${seq.toString().padStart(4, '0')}0123456789abcdef`,
        netns: await lab.addPod(),
      });
    }
    return out;
  }

  async function run(node: NodeNs, viaService: boolean, command: string, p: Pod): Promise<void> {
    const r = await lab.run(node, CALICO, env(command, p.cid, p.netns, p.name), conf(node, viaService));
    expect(r.code, `${command} ${p.name}: ${r.stdout}${r.stderr.slice(-2000)}`).toBe(0);
  }

  /** ADDs of N pods one after another, then their DELs: what each asked of the API server. */
  async function measure(node: NodeNs, viaService: boolean) {
    // The node's first ADD claims its block (and the service mirrors the node); it stays.
    const [warm] = await pods(node, 1);
    await run(node, viaService, 'ADD', warm!);
    const batch = await pods(node, N);
    const c0 = await readApiRequestCounts(lab.api);
    for (const p of batch) await run(node, viaService, 'ADD', p);
    const c1 = await readApiRequestCounts(lab.api);
    for (const p of batch) await run(node, viaService, 'DEL', p);
    const c2 = await readApiRequestCounts(lab.api);
    const per = (a: ApiRequestCounts, b: ApiRequestCounts) =>
      requestsBetween(a, b, { ops: N, only: counted });
    const result = { ADD: per(c0, c1), DEL: per(c1, c2) };
    return result;
  }

  it('direct: each ADD and each DEL makes exactly these requests', async () => {
    expect(await measure(lab.nodes[0]!, false)).toEqual({
      ADD: {
        'GET clusterinformations': 1, // datastoreReady
        'GET pods': 1, // the Pod: annotations, labels, and the endpoint it holds
        'GET namespaces': 1, // pool annotations and labels for namespaceSelectors
        'GET nodes': 1, // IPAM: the node's labels for the pools' nodeSelectors
        'LIST ippools': 1, // IPAM: the pools
        'LIST ipreservations': 1, // IPAM: addresses not to hand out
        'GET ipamconfigs': 1, // IPAM: strict affinity, max blocks per host
        'LIST blockaffinities': 1, // IPAM: the node's blocks
        'GET ipamblocks': 1, // IPAM: the affine block, for its compare-and-swap
        'POST ipamhandles': 1, // IPAM: the container's handle
        'PUT ipamblocks': 1, // IPAM: the address, a compare-and-swap of the block
        'PUT pods': 1, // the endpoint's annotations, a compare-and-swap of the Pod
      },
      DEL: {
        'GET clusterinformations': 1, // datastoreReady
        'GET pods': 1, // whose endpoint it is
        'PUT pods': 1, // the endpoint's annotations cleared, a compare-and-swap of the Pod
        'GET ipamhandles': 1, // IPAM: which blocks the handle holds addresses in
        'GET ipamblocks': 1, // IPAM: that block
        'PUT ipamblocks': 1, // IPAM: the address freed, a compare-and-swap of the block
        'DELETE ipamhandles': 1, // IPAM: the handle, with its resourceVersion as precondition
      },
    });
  }, 120_000);

  it('through the plugin service: each ADD and each DEL makes exactly these requests', async () => {
    // ClusterInformation and the node's IPAM records (pools, reservations, config, affinities and
    // its blocks) come from the service's watches.
    expect(await measure(lab.nodes[1]!, true)).toEqual({
      ADD: {
        'GET pods': 1,
        'GET namespaces': 1,
        'POST ipamhandles': 1,
        'PUT ipamblocks': 1,
        'PUT pods': 1,
      },
      DEL: {
        'GET pods': 1,
        'PUT pods': 1,
        'GET ipamhandles': 1,
        'PUT ipamblocks': 1,
        'DELETE ipamhandles': 1,
      },
    });
  }, 120_000);
});
