/**
 * Two BGP nodes for this package's privileged tests: network namespaces `<prefix>-<tag>-a/b`
 * joined by a veth pair (198.18.0.1/24, 198.18.0.2/24), a private etcd holding the two Nodes, an
 * IPPool and one affine block per node, and per node what calico-node starts for BGP: a
 * BirdSupervisor running a real BIRD 2 in the node's namespace and a BirdBridge feeding it.
 * `close()` stops what was started (BIRD by its PID), deletes the namespaces it made and its dir.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loggerOf } from '@calico-ts/api/log';
import { KVDatastore } from '@calico-ts/datastore';
import { EtcdKVStore } from '@calico-ts/datastore/etcd3';
import { type EtcdServer, startEtcd } from '@calico-ts/datastore/testing';
import { IpamStore } from '@calico-ts/ipam';
import { BirdControlClient } from '../bird/bird-control-client.js';
import { BirdSupervisor } from '../bird/bird-supervisor.js';
import { BirdBridge, nodeAffinitySource } from '../bridge.js';
import { node, pool } from '../render/testdata/golden-cases.js';
import { addNetns, deleteNetns, ip, nsenterPrefix, pidAlive, uniqueTag } from './netns.js';

export type Side = 'a' | 'b';

/** The two nodes: their addresses on the veth, their blocks and a pod address in each block. */
export const NODES = [
  { name: 'node-a', side: 'a', addr: '198.18.0.1', block: '198.19.0.0/26', pod: '198.19.0.5' },
  { name: 'node-b', side: 'b', addr: '198.18.0.2', block: '198.19.0.64/26', pod: '198.19.0.70' },
] as const;

export interface TwoNodesOptions {
  /** Starts the namespaces' and the temp dir's names. */
  readonly prefix: string;
  /** Starts the veth ends' names (`<vethPrefix><tag><side>`). */
  readonly vethPrefix: string;
  /** Each log line starts with the time in ms. */
  readonly timestampLogs?: boolean;
}

/** What `startNode` started on a node. */
export interface NodeBgp {
  readonly supervisor: BirdSupervisor;
  readonly client: BirdControlClient;
  readonly bridge: BirdBridge;
}

export class TwoNodes {
  readonly tag = uniqueTag();
  readonly ns: Record<Side, string>;
  /** Every namespace made through this lab, deleted by `close()`. */
  readonly created: string[] = [];
  readonly stores: EtcdKVStore[] = [];
  readonly bridges: BirdBridge[] = [];
  readonly supervisors: BirdSupervisor[] = [];
  /** The bridges' and supervisors' log lines: `<node> <level> <message> [fields]`. */
  readonly logs: string[] = [];
  dir = '';
  etcd: EtcdServer | undefined;
  /** A datastore client of the private etcd, for the test's own writes. */
  admin!: KVDatastore;

  constructor(private readonly o: TwoNodesOptions) {
    this.ns = { a: `${o.prefix}-${this.tag}-a`, b: `${o.prefix}-${this.tag}-b` };
  }

  /** The veth end in `side`'s namespace. */
  veth(side: Side): string {
    return `${this.o.vethPrefix}${this.tag}${side}`;
  }

  /** Creates a namespace that `close()` deletes; returns its name. */
  addNetns(name: string): string {
    this.created.push(addNetns(name));
    return name;
  }

  /** The temp dir and the two node namespaces, joined and addressed. */
  async wire(): Promise<void> {
    this.dir = await mkdtemp(join(tmpdir(), `${this.o.prefix}-`));
    for (const n of NODES) this.addNetns(this.ns[n.side]);
    await ip([
      'link',
      'add',
      this.veth('a'),
      'netns',
      this.ns.a,
      'type',
      'veth',
      'peer',
      'name',
      this.veth('b'),
      'netns',
      this.ns.b,
    ]);
    for (const n of NODES) {
      await ip(['-n', this.ns[n.side], 'addr', 'add', `${n.addr}/24`, 'dev', this.veth(n.side)]);
      await ip(['-n', this.ns[n.side], 'link', 'set', this.veth(n.side), 'up']);
    }
  }

  /** Starts etcd and writes the IPPool, the Nodes and their block affinities. */
  async seed(): Promise<void> {
    this.etcd = await startEtcd();
    const adminKv = new EtcdKVStore({ endpoints: this.etcd.endpoints });
    this.stores.push(adminKv);
    this.admin = new KVDatastore(adminKv, { backend: 'etcdv3' });
    const ipam = new IpamStore(adminKv);
    await this.admin.create(
      pool('default-ipv4-ippool', { cidr: '198.19.0.0/16', ipipMode: 'Never', vxlanMode: 'Never' }),
    );
    for (const n of NODES) {
      await this.admin.create(node(n.name, { ipv4Address: `${n.addr}/24` }));
      await ipam.createAffinity({ host: n.name, cidr: n.block, state: 'confirmed', deleted: false });
    }
  }

  /**
   * What calico-node starts for BGP on a node: a BirdSupervisor (BIRD in the node's namespace) and
   * a BirdBridge feeding it from etcd. Started again after a stop, it is a restarted calico-node.
   */
  async startNode(side: Side): Promise<NodeBgp> {
    const n = NODES.find((x) => x.side === side)!;
    const kv = new EtcdKVStore({ endpoints: this.etcd!.endpoints });
    this.stores.push(kv);
    const log = loggerOf((level, message, fields) =>
      this.logs.push(
        `${this.o.timestampLogs ? `${Date.now()} ` : ''}${n.name} ${level} ${message}${fields ? ` ${JSON.stringify(fields)}` : ''}`,
      ),
    );
    const supervisor = new BirdSupervisor({
      configDir: join(this.dir, side, 'config'),
      socketPath: join(this.dir, side, 'bird.ctl'),
      commandPrefix: nsenterPrefix(this.ns[side]),
      log,
    });
    this.supervisors.push(supervisor);
    const client = new BirdControlClient(join(this.dir, side, 'bird.ctl'));
    const bridge = new BirdBridge({
      datastore: new KVDatastore(kv, { backend: 'etcdv3' }),
      affinities: nodeAffinitySource(kv, n.name),
      nodeName: n.name,
      targets: { 4: supervisor },
      log,
    });
    this.bridges.push(bridge);
    await bridge.start();
    return { supervisor, client, bridge };
  }

  /** Stops the bridges, kills any BIRD still alive by its PID, stops etcd, deletes what was made. */
  async close(): Promise<void> {
    for (const b of this.bridges) await b.stop().catch(() => undefined);
    // Belt and braces: a BIRD this test started that is somehow still alive is killed by its PID.
    for (const s of this.supervisors) {
      const pid = s.pid;
      if (pid !== undefined && pidAlive(pid)) process.kill(pid, 'SIGKILL');
    }
    for (const s of this.stores) await s.close().catch(() => undefined);
    await this.etcd?.stop();
    deleteNetns(this.created);
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }
}
