// The lab's pod-to-pod path built from plain Linux, without any Calico program: what this host's
// kernel allows for a path of that shape. Two "nodes" on a bridge in their own namespace (as the
// lab's fabric), each with one "pod" behind a veth: the pod has a /32 and a default route via
// 169.254.1.1, answered by proxy ARP on the node's end, and the node routes the pod's /32 to that
// end, as the CNI plugin sets it up. Remote pods are reached by a static route (bgp mode: what
// BIRD programs) or through a VXLAN device with static neighbour and FDB entries (vxlan mode: what
// Felix programs). No nftables table, no conntrack, no rp_filter; `conntrack(true)` adds to each
// node the least a stateful policy needs: one table whose input, forward and output chains accept
// established traffic, which turns connection tracking on for the node.
//
// Addresses are in 198.18.0.0/15 and the namespaces are never connected to the host's network.
import { spawnSync } from 'node:child_process';

const NODE_NET = '198.18.200';
const VNI = 4096;
const VXLAN_PORT = 4789;

function ip(argv) {
  const r = spawnSync('ip', argv, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${argv.join(' ')}: ${r.stderr.trim()}`);
}

function sysctl(netns, key, value) {
  ip(['netns', 'exec', netns, 'sysctl', '-qw', `${key}=${value}`]);
}

export class BarePath {
  /**
   * @param {'bgp' | 'vxlan'} mode
   * @param {number} podMtu the MTU the lab gives its pods in this mode
   */
  constructor(mode, podMtu) {
    this.mode = mode;
    this.podMtu = podMtu;
    const tag = Math.random().toString(16).slice(2, 6);
    this.ns = {
      fabric: `bare${tag}-fab`,
      n1: `bare${tag}-n1`,
      n2: `bare${tag}-n2`,
      p1: `bare${tag}-p1`,
      p2: `bare${tag}-p2`,
    };
    this.made = [];
  }

  /** Pod and node addresses to measure between: `from` namespaces and target IPs. */
  get ends() {
    return {
      pod: { from: this.ns.p1, to: this.ns.p2, ip: podIp(2) },
      node: { from: this.ns.n1, to: this.ns.n2, ip: nodeIp(2) },
    };
  }

  up() {
    const { fabric } = this.ns;
    for (const n of Object.values(this.ns)) {
      ip(['netns', 'add', n]);
      this.made.push(n);
      ip(['-n', n, 'link', 'set', 'lo', 'up']);
    }
    ip(['-n', fabric, 'link', 'add', 'br0', 'type', 'bridge']);
    ip(['-n', fabric, 'addr', 'add', `${NODE_NET}.1/24`, 'dev', 'br0']);
    ip(['-n', fabric, 'link', 'set', 'br0', 'up']);
    for (const i of [1, 2]) {
      const node = this.ns[`n${i}`];
      const pod = this.ns[`p${i}`];
      ip(['-n', fabric, 'link', 'add', `n${i}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', node]);
      ip(['-n', fabric, 'link', 'set', `n${i}`, 'master', 'br0', 'up']);
      ip(['-n', node, 'addr', 'add', `${nodeIp(i)}/24`, 'dev', 'eth0']);
      ip(['-n', node, 'link', 'set', 'eth0', 'up']);
      ip(['-n', node, 'route', 'add', 'default', 'via', `${NODE_NET}.1`]);
      sysctl(node, 'net.ipv4.ip_forward', 1);

      ip([
        '-n',
        pod,
        'link',
        'add',
        'eth0',
        'mtu',
        String(this.podMtu),
        'type',
        'veth',
        'peer',
        'name',
        'calibare',
        'netns',
        node,
      ]);
      ip(['-n', pod, 'addr', 'add', `${podIp(i)}/32`, 'dev', 'eth0']);
      ip(['-n', pod, 'link', 'set', 'eth0', 'up']);
      ip(['-n', pod, 'route', 'add', '169.254.1.1', 'dev', 'eth0', 'scope', 'link']);
      ip(['-n', pod, 'route', 'add', 'default', 'via', '169.254.1.1', 'dev', 'eth0']);
      ip(['-n', node, 'link', 'set', 'calibare', 'address', 'ee:ee:ee:ee:ee:ee', 'up']);
      sysctl(node, 'net.ipv4.conf.calibare.proxy_arp', 1);
      ip(['-n', node, 'route', 'add', `${podIp(i)}/32`, 'dev', 'calibare', 'scope', 'link']);
    }
    if (this.mode === 'vxlan') this.vxlan();
    else {
      ip(['-n', this.ns.n1, 'route', 'add', `${podIp(2)}/32`, 'via', nodeIp(2)]);
      ip(['-n', this.ns.n2, 'route', 'add', `${podIp(1)}/32`, 'via', nodeIp(1)]);
    }
    return this;
  }

  vxlan() {
    const mac = (i) => `66:00:00:00:00:0${i}`;
    const tunnel = (i) => `198.18.22${i}.0`;
    for (const i of [1, 2]) {
      const node = this.ns[`n${i}`];
      const j = 3 - i;
      ip([
        '-n',
        node,
        'link',
        'add',
        'vxlan.bare',
        'address',
        mac(i),
        'mtu',
        '1450',
        'type',
        'vxlan',
        'id',
        String(VNI),
        'local',
        nodeIp(i),
        'dev',
        'eth0',
        'dstport',
        String(VXLAN_PORT),
        'nolearning',
      ]);
      ip(['-n', node, 'link', 'set', 'vxlan.bare', 'up']);
      ip(['-n', node, 'addr', 'add', `${tunnel(i)}/32`, 'dev', 'vxlan.bare']);
      ip(['-n', node, 'neigh', 'add', tunnel(j), 'lladdr', mac(j), 'dev', 'vxlan.bare', 'nud', 'permanent']);
      const fdb = ['fdb', 'add', mac(j), 'dev', 'vxlan.bare', 'dst', nodeIp(j), 'self', 'permanent'];
      const r = spawnSync('bridge', ['-n', node, ...fdb], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`bridge ${fdb.join(' ')}: ${r.stderr.trim()}`);
      ip(['-n', node, 'route', 'add', `${podIp(j)}/32`, 'via', tunnel(j), 'dev', 'vxlan.bare', 'onlink']);
    }
  }

  /** Turns the nodes' conntrack table on or off. */
  conntrack(on) {
    for (const node of [this.ns.n1, this.ns.n2]) {
      const r = spawnSync('ip', ['netns', 'exec', node, 'nft', '-f', '-'], {
        input: on ? CONNTRACK_TABLE : 'delete table ip bare\n',
        encoding: 'utf8',
      });
      if (r.status !== 0) throw new Error(`nft in ${node}: ${r.stderr.trim()}`);
    }
  }

  /** Removes every namespace this path made (and with them their links); safe to call twice. */
  down() {
    for (const n of this.made.splice(0).reverse()) spawnSync('ip', ['netns', 'del', n]);
  }
}

const CONNTRACK_TABLE = `table ip bare {
  chain input { type filter hook input priority filter; ct state established,related accept; }
  chain forward { type filter hook forward priority filter; ct state established,related accept; }
  chain output { type filter hook output priority filter; ct state established,related accept; }
}
`;

function nodeIp(i) {
  return `${NODE_NET}.1${i}`;
}

function podIp(i) {
  return `198.18.21${i}.1`;
}
