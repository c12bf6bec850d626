/**
 * The start-up sequence on the in-memory datastore: what lands at upstream's etcd keys, with
 * fake interfaces and a temp directory for the nodename file.
 */

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loggerOf } from '@calico-ts/api/log';
import { KVDatastore, MemoryKVStore } from '@calico-ts/datastore';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HostInterface } from './autodetect.js';
import { parseNodeEnv } from './env.js';
import { isNodeError } from './errors.js';
import { runStartup, type StartupDeps } from './startup.js';

const R = '/calico/resources/v3/projectcalico.org';
const GUID = 'b7d4a1c0f3e24a6b9d1e2f3a4b5c6d7e';

describe('start-up', () => {
  let dir: string;
  let kv: MemoryKVStore;
  let ds: KVDatastore;
  const logs: string[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'calico-node-startup-'));
    kv = new MemoryKVStore();
    ds = new KVDatastore(kv, { backend: 'etcdv3' });
    logs.length = 0;
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const deps = (ifaces: HostInterface[]): StartupDeps => ({
    datastore: ds,
    interfaces: async () => ifaces,
    reachSource: async () => undefined,
    log: loggerOf((_level, m) => logs.push(m)),
    guid: () => GUID,
  });
  const eth0 = (ip: string): HostInterface[] => [
    { name: 'lo', index: 1, cidrs: ['127.0.0.1/8'] },
    { name: 'eth0', index: 2, cidrs: [`${ip}/24`] },
  ];
  const labEnv = (name: string, extra: Record<string, string> = {}) =>
    parseNodeEnv(
      {
        NODENAME: name,
        CLUSTER_TYPE: 'k8s,bgp',
        IP: 'autodetect',
        IP_AUTODETECTION_METHOD: 'interface=eth0',
        CALICO_IPV4POOL_CIDR: '198.19.0.0/16',
        CALICO_IPV4POOL_IPIP: 'Never',
        CALICO_IPV4POOL_VXLAN: 'Never',
        CALICO_K8S_NODE_REF: name,
        CALICO_VAR_LIB_DIR: join(dir, name),
        ...extra,
      },
      'host',
    );
  const value = (key: string) => {
    const v = kv.dump().kvs[key];
    return v === undefined ? undefined : JSON.parse(v);
  };

  it('registers the Node and writes the cluster defaults at upstream keys', async () => {
    const r = await runStartup(labEnv('n1'), deps(eth0('198.18.0.11')));
    expect(value(`${R}/nodes/n1`).spec).toEqual({
      bgp: { ipv4Address: '198.18.0.11/24' },
      orchRefs: [{ nodeName: 'n1', orchestrator: 'k8s' }],
    });
    expect(value(`${R}/ippools/default-ipv4-ippool`).spec).toMatchObject({
      cidr: '198.19.0.0/16',
      blockSize: 26,
      ipipMode: 'Never',
      vxlanMode: 'Never',
      natOutgoing: true,
    });
    expect(value(`${R}/clusterinformations/default`).spec).toEqual({
      clusterGUID: GUID,
      clusterType: 'k8s,bgp',
      calicoVersion: 'v3.32.1',
      datastoreReady: true,
    });
    for (const [tier, order, action] of [
      ['default', 1_000_000, 'Deny'],
      ['kube-admin', 1_000, 'Pass'],
      ['kube-baseline', 10_000_000, 'Pass'],
    ] as const) {
      expect(value(`${R}/tiers/${tier}`).spec).toMatchObject({ order, defaultAction: action });
    }
    expect(value(`${R}/felixconfigurations/default`).spec).toMatchObject({ logSeverityScreen: 'Info' });
    expect(value(`${R}/felixconfigurations/node.n1`).spec).toMatchObject({
      defaultEndpointToHostAction: 'Return',
    });
    expect(value(`${R}/bgpconfigurations/default`)).toBeDefined();
    expect(await readFile(join(dir, 'n1', 'nodename'), 'utf8')).toBe('n1');
    expect(r.nodenameFile).toBe(join(dir, 'n1', 'nodename'));
  });

  it('a second node joins without rewriting the shared objects; a restart writes nothing', async () => {
    await runStartup(labEnv('n1'), deps(eth0('198.18.0.11')));
    const pool = kv.dump().kvs[`${R}/ippools/default-ipv4-ippool`];
    await runStartup(labEnv('n2', { CALICO_IPV4POOL_VXLAN: 'Always' }), deps(eth0('198.18.0.12')));
    expect(kv.dump().kvs[`${R}/ippools/default-ipv4-ippool`]).toBe(pool);
    expect(value(`${R}/nodes/n2`).spec.bgp).toEqual({ ipv4Address: '198.18.0.12/24' });
    const before = kv.dump();
    await runStartup(labEnv('n2', { CALICO_IPV4POOL_VXLAN: 'Always' }), deps(eth0('198.18.0.12')));
    expect(kv.dump().revision).toBe(before.revision);
  });

  it('refuses an address another Node holds, writing nothing for this node', async () => {
    await runStartup(labEnv('n1'), deps(eth0('198.18.0.11')));
    const err = await runStartup(labEnv('n2'), deps(eth0('198.18.0.11'))).catch((e: unknown) => e);
    expect(isNodeError(err, 'conflict')).toBe(true);
    expect((err as Error).message).toBe("Calico node 'n1' is already using the IPv4 address 198.18.0.11");
    expect(value(`${R}/nodes/n2`)).toBeUndefined();
  });

  it('fails with a clear message when no address can be found', async () => {
    const err = await runStartup(
      labEnv('n1'),
      deps([{ name: 'lo', index: 1, cidrs: ['127.0.0.1/8'] }]),
    ).catch((e: unknown) => e);
    expect(isNodeError(err, 'autodetect')).toBe(true);
    expect((err as Error).message).toMatch(
      /^cannot autodetect an IPv4 address \(no valid IPv4 address on an interface matching eth0\)/,
    );
    expect(kv.dump().kvs).toEqual({});
  });

  it('with networking none registers a Node without BGP address and no interfaces are read', async () => {
    const env = parseNodeEnv(
      { NODENAME: 'p1', CALICO_NETWORKING_BACKEND: 'none', CALICO_VAR_LIB_DIR: dir },
      'h',
    );
    await runStartup(env, {
      ...deps([]),
      interfaces: async () => {
        throw new Error('must not be read');
      },
    });
    expect(value(`${R}/nodes/p1`).spec).toEqual({});
  });

  it('dual stack: registers both addresses and makes both default pools', async () => {
    const ifaces: HostInterface[] = [
      { name: 'lo', index: 1, cidrs: ['127.0.0.1/8', '::1/128'] },
      { name: 'eth0', index: 2, cidrs: ['198.18.0.11/24', 'fd00:18::11/64', 'fe80::1/64'] },
    ];
    const env = labEnv('n1', {
      IP6: 'autodetect',
      IP6_AUTODETECTION_METHOD: 'interface=eth0',
      CALICO_IPV6POOL_CIDR: 'fd00:19::/48',
      FELIX_IPV6SUPPORT: 'true',
    });
    await runStartup(env, deps(ifaces));
    expect(value(`${R}/nodes/n1`).spec.bgp).toEqual({
      ipv4Address: '198.18.0.11/24',
      ipv6Address: 'fd00:18::11/64',
    });
    const pool6 = value(`${R}/ippools/default-ipv6-ippool`).spec;
    expect(pool6).toMatchObject({ cidr: 'fd00:19::/48', blockSize: 122 });
    // natOutgoing false is left out of the stored JSON, as Go's omitempty does.
    expect(pool6.natOutgoing ?? false).toBe(false);
    expect(value(`${R}/ippools/default-ipv4-ippool`).spec.cidr).toBe('198.19.0.0/16');
    // Another node with the same IPv6 address is refused.
    const err = await runStartup(
      labEnv('n2', { IP6: 'autodetect', IP6_AUTODETECTION_METHOD: 'interface=eth0' }),
      deps([{ name: 'eth0', index: 2, cidrs: ['198.18.0.12/24', 'fd00:18::11/64'] }]),
    ).catch((e: unknown) => e);
    expect((err as Error).message).toBe("Calico node 'n1' is already using the IPv6 address fd00:18::11");
  });

  it('IPv4 only with FELIX_IPV6SUPPORT=false: no IPv6 address and no IPv6 pool', async () => {
    await runStartup(labEnv('n1', { FELIX_IPV6SUPPORT: 'false' }), deps(eth0('198.18.0.11')));
    expect(value(`${R}/nodes/n1`).spec.bgp).toEqual({ ipv4Address: '198.18.0.11/24' });
    expect(value(`${R}/ippools/default-ipv6-ippool`)).toBeUndefined();
  });
});
