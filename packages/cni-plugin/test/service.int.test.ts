/**
 * The plugin service as an operator meets it: `calico --serve` on a node, the executables handing
 * their invocations to it, and every way it may be absent or unusable leaving the plugin working on
 * its own (root, etcd, ip and nsenter; see lab.ts). The full ADD/DEL/CHECK/GC suite through a
 * service is cni.service.int.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { etcdAvailable } from '@calico-ts/datastore/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answers, Lab, type NodeNs, runIn } from './lab.js';
import { buildPlugins, pluginDir, pluginFile, removePlugins } from './plugin-executable.js';

const CALICO = join(pluginDir, 'calico');
const missing =
  process.getuid?.() !== 0 || !etcdAvailable() || spawnSync('sh', ['-c', 'command -v nsenter']).status !== 0;

describe.skipIf(missing)('CNI plugin service', () => {
  const lab = new Lab();
  let node: NodeNs;
  let seq = 0;

  beforeAll(async () => {
    await buildPlugins();
    await lab.start(2);
    await lab.seed();
    node = lab.nodes[0]!;
  }, 120_000);

  afterAll(async () => {
    await lab.close();
    await removePlugins();
  }, 60_000);

  // No policy plugin: the service's mechanics do not depend on it, and `policy.type: k8s` would
  // read each pod from a Kubernetes API server this lab does not have (see cni.k8s.int.test.ts).
  function conf(socket: string): string {
    return JSON.stringify({
      cniVersion: '1.0.0',
      name: 'k8s-pod-network',
      type: 'calico',
      ipam: { type: 'calico-ipam' },
      nodename_file: node.nodenameFile,
      ipam_lock_file: node.lockFile,
      service_socket: socket,
      ...lab.etcdConf(),
    });
  }

  /** ADD then DEL of a fresh pod on `node`; both must succeed. Returns the ADD's stderr. */
  async function addAndDel(socket: string): Promise<string> {
    const netns = await lab.addPod();
    const cid = `svc${++seq}0123456789`;
    const e = {
      CNI_COMMAND: 'ADD',
      CNI_CONTAINERID: cid,
      CNI_NETNS: netns,
      CNI_IFNAME: 'eth0',
      CNI_PATH: pluginDir,
      CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=svc${seq};K8S_POD_INFRA_CONTAINER_ID=${cid}`,
    };
    const add = await lab.run(node, CALICO, e, conf(socket));
    expect(add.code, add.stdout + add.stderr).toBe(0);
    expect(add.json.ips[0].address).toMatch(/^198\.19\.\d+\.\d+\/32$/);
    const del = await lab.run(node, CALICO, { ...e, CNI_COMMAND: 'DEL' }, conf(socket));
    expect(del.code, del.stdout + del.stderr).toBe(0);
    return add.stderr;
  }

  /** Starts `calico --serve=<socket>` in `netns`; stop() ends it and resolves its stderr. */
  async function serve(netns: string, socket: string) {
    const child = lab.spawnIn(netns, pluginFile, [`--serve=${socket}`]);
    const err: Buffer[] = [];
    child.stderr!.on('data', (b: Buffer) => err.push(b));
    const exited = new Promise<{ code: number | null; stderr: string }>((resolve) =>
      child.once('exit', (code) => resolve({ code, stderr: Buffer.concat(err).toString('utf8') })),
    );
    const deadline = Date.now() + 15_000;
    while (!(await answers(socket))) {
      if (child.exitCode !== null) throw new Error(`service exited: ${(await exited).stderr}`);
      if (Date.now() > deadline) throw new Error('service did not start');
      await new Promise((r) => setTimeout(r, 25));
    }
    return {
      exited,
      /** Ends it as a crash would (nsenter execs the service: the child's PID is the service's). */
      crash: () => child.kill('SIGKILL'),
      async stop(): Promise<number> {
        child.kill('SIGTERM');
        const { stderr } = await exited;
        return Number(/stopping after (\d+) invocations/.exec(stderr)?.[1] ?? -1);
      },
    };
  }

  it('answers the ADD and DEL of a pod on its node; the socket is for root only', async () => {
    const socket = join(lab.tmp, 'own.sock');
    const svc = await serve(node.netns, socket);
    expect(statSync(socket).mode & 0o777).toBe(0o600);
    const stderr = await addAndDel(socket);
    // Log lines name the plugin process the runtime started, as a direct run does.
    expect(stderr).not.toMatch(/fatal/);
    expect(await svc.stop()).toBe(2);
    // It removes its socket on the way out.
    expect(await answers(socket)).toBe(false);
  });

  it('declines a caller in another network namespace, which then does the work itself', async () => {
    const socket = join(lab.tmp, 'other-node.sock');
    const svc = await serve(lab.nodes[1]!.netns, socket);
    await addAndDel(socket);
    expect(await svc.stop()).toBe(0);
  });

  it('a socket file nobody listens on, or service_socket "", leaves the plugin working on its own', async () => {
    const stale = join(lab.tmp, 'stale.sock');
    const svc = await serve(node.netns, stale);
    // SIGKILL leaves the socket file behind, as a crash would.
    svc.crash();
    await svc.exited;
    expect(statSync(stale).isSocket()).toBe(true);
    await addAndDel(stale);
    await addAndDel('');
    // And a new service takes the stale socket over.
    const again = await serve(node.netns, stale);
    await addAndDel(stale);
    expect(await again.stop()).toBe(2);
  });

  it('a second service on a live socket refuses to start and says why; one on a plain file too', async () => {
    const socket = join(lab.tmp, 'taken.sock');
    const svc = await serve(node.netns, socket);
    const second = await runIn(node.netns, pluginFile, [`--serve=${socket}`], {}, '');
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/another plugin service is listening on .*taken\.sock/);
    expect(await svc.stop()).toBe(0);

    const plain = join(lab.tmp, 'not-a-socket');
    await writeFile(plain, 'keep me');
    const third = await runIn(node.netns, pluginFile, [`--serve=${plain}`], {}, '');
    expect(third.code).toBe(1);
    expect(third.stderr).toMatch(/not-a-socket exists and is not a socket/);
    expect(statSync(plain).size).toBe(7);
  });

  it('declines a CNI_NETNS it cannot see (as in a container without the runtime’s netns files): same error as a direct run', async () => {
    const socket = join(lab.tmp, 'blind.sock');
    const svc = await serve(node.netns, socket);
    const env = {
      CNI_COMMAND: 'ADD',
      CNI_CONTAINERID: 'svcblind1',
      CNI_NETNS: '/run/netns/cnitest-no-such-netns',
      CNI_IFNAME: 'eth0',
      CNI_PATH: pluginDir,
    };
    const viaService = await lab.run(node, CALICO, env, conf(socket));
    const direct = await lab.run(node, CALICO, env, conf(''));
    expect(viaService.code).toBe(1);
    expect(viaService.json).toEqual(direct.json);
    expect(viaService.json.msg).toMatch(/cnitest-no-such-netns/);
    expect(await svc.stop()).toBe(0);
  });

  it('an invocation the service cannot finish reports a CNI error, as a direct run would', async () => {
    const socket = join(lab.tmp, 'errors.sock');
    const svc = await serve(node.netns, socket);
    const netns = await lab.addPod();
    const r = await lab.run(
      node,
      CALICO,
      {
        CNI_COMMAND: 'ADD',
        CNI_CONTAINERID: 'svcerr1',
        CNI_NETNS: netns,
        CNI_IFNAME: 'eth0',
        CNI_PATH: pluginDir,
      },
      JSON.stringify({ ...JSON.parse(conf(socket)), etcd_endpoints: 'https://127.0.0.1:1' }),
    );
    expect(r.code).toBe(1);
    expect(r.json).toMatchObject({ code: 11, msg: expect.stringMatching(/datastore|etcd|connect/i) });
    expect(await svc.stop()).toBe(1);
  });
});
