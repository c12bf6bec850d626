/**
 * A fake host for running FelixDaemon in a test without touching the machine: a scripted `ip`
 * that knows two links, a `/proc/sys` in a directory, and one workload endpoint in the datastore
 * on the link the scripted `ip` lists.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Resource } from '@calico-ts/api';
import type { Datastore } from '@calico-ts/datastore';
import { ScriptedCommandRunner } from '@calico-ts/netlinux/testing';

const V3 = 'projectcalico.org/v3';

/** `ip -j link show` on the fake host: the uplink `eth0` and the workload's `calia`, both MTU 1480. */
export const FAKE_LINKS: string = JSON.stringify([
  {
    ifname: 'eth0',
    ifindex: 2,
    mtu: 1480,
    flags: ['UP', 'LOWER_UP'],
    operstate: 'UP',
    address: '02:00:00:00:00:01',
  },
  {
    ifname: 'calia',
    ifindex: 7,
    mtu: 1480,
    flags: ['UP', 'LOWER_UP'],
    operstate: 'UP',
    address: 'ee:ee:ee:ee:ee:ee',
  },
]);

/** The fake host's `ip`: a link listing prints {@link FAKE_LINKS}, every other command `[]`. */
export function fakeIp(): ScriptedCommandRunner {
  return new ScriptedCommandRunner((c) =>
    c.args.includes('link') ? { stdout: FAKE_LINKS } : { stdout: '[]' },
  );
}

/**
 * Makes `dir` a `/proc/sys` with IPv4 and IPv6 forwarding off, for Netlinux's `procSys` (sysctls
 * written outside a namespace then go there, never to the host's).
 *
 * @returns `dir`.
 */
export async function fakeProcSys(dir: string): Promise<string> {
  for (const key of ['net/ipv4/ip_forward', 'net/ipv6/conf/all/forwarding']) {
    await mkdir(join(dir, dirname(key)), { recursive: true });
    await writeFile(join(dir, key), '0\n');
  }
  return dir;
}

/** What {@link seedWebWorkload} adds to its profile. */
export interface WebWorkloadOptions {
  /** The profile's `labelsToApply`; absent: none. */
  readonly profileLabelsToApply?: Record<string, string>;
}

/**
 * Creates the profile `kns.a` (allow all in and out) and the workload endpoint
 * `node1-k8s-web-eth0` in namespace `a`: pod `web` on node `node1`, label `app: web`, address
 * 198.19.0.1/32, interface `calia`.
 */
export async function seedWebWorkload(ds: Datastore, options: WebWorkloadOptions = {}): Promise<void> {
  await ds.create({
    apiVersion: V3,
    kind: 'Profile',
    metadata: { name: 'kns.a' },
    spec: {
      ingress: [{ action: 'Allow' }],
      egress: [{ action: 'Allow' }],
      ...(options.profileLabelsToApply ? { labelsToApply: options.profileLabelsToApply } : {}),
    },
  } as Resource & { kind: 'Profile' });
  await ds.create({
    apiVersion: V3,
    kind: 'WorkloadEndpoint',
    metadata: { name: 'node1-k8s-web-eth0', namespace: 'a', labels: { app: 'web' } },
    spec: {
      orchestrator: 'k8s',
      node: 'node1',
      pod: 'web',
      endpoint: 'eth0',
      containerID: 'c1',
      ipNetworks: ['198.19.0.1/32'],
      profiles: ['kns.a'],
      interfaceName: 'calia',
    },
  } as Resource & { kind: 'WorkloadEndpoint' });
}
