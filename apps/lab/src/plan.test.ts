import { describe, expect, it } from 'vitest';
import { kubePlanOf, labFamilies, planLab, podNetns } from './plan.js';
import {
  calicoctlConfigText,
  calicoNodeEnv,
  cniConflist,
  kubeControllersEnv,
  labInterfacePrefix,
  pluginConfig,
  typhaEnv,
} from './program-config.js';

describe('lab plan', () => {
  it('default lab: fabric and etcd namespaces, nodes n1…nN on 198.18.0.11…', () => {
    const p = planLab({ name: 'lab', nodes: 3, mode: 'bgp', stateDir: '/var/run/calico-lab/lab' });
    expect(p.fabricNetns).toBe('lab-fabric');
    expect(p.etcdNetns).toBe('lab-etcd');
    expect(p.etcdUrl).toBe('http://198.18.0.2:2379');
    expect(p.nodes.map((n) => [n.name, n.netns, n.ip, n.fabricIf])).toEqual([
      ['n1', 'n1', '198.18.0.11', 'n1'],
      ['n2', 'n2', '198.18.0.12', 'n2'],
      ['n3', 'n3', '198.18.0.13', 'n3'],
    ]);
    expect(p.nodes[1]).toMatchObject({
      libDir: '/var/run/calico-lab/lab/nodes/n2/lib',
      runDir: '/var/run/calico-lab/lab/nodes/n2/run',
      birdDir: '/var/run/calico-lab/lab/nodes/n2/bird',
    });
  });
  it('another lab prefixes its node namespaces so two labs never share one', () => {
    const p = planLab({ name: 'e2e7', nodes: 2, mode: 'vxlan', stateDir: '/tmp/e2e7' });
    expect(p.nodes.map((n) => n.netns)).toEqual(['e2e7-n1', 'e2e7-n2']);
    expect(p.nodes.map((n) => n.name)).toEqual(['n1', 'n2']);
    expect(p.fabricNetns).toBe('e2e7-fabric');
    expect(podNetns('e2e7', 'team-a', 'web')).toBe('e2e7-pod-team-a-web');
  });
  it('--typha: Typha on the etcd address and the lab datastore, every calico-node pointed at it', () => {
    const p = planLab({
      name: 'lab',
      nodes: 2,
      mode: 'bgp',
      datastore: 'etcdv3',
      typha: true,
      stateDir: '/s',
    });
    expect(p.typha).toEqual({ addr: '198.18.0.2:5473', metricsPort: 9093, log: '/s/typha.log' });
    expect(calicoNodeEnv(p, p.nodes[1]!, '/usr/bin').FELIX_TYPHAADDR).toBe('198.18.0.2:5473');
    expect(typhaEnv(p, p.typha!, '/usr/bin')).toMatchObject({
      TYPHA_DATASTORETYPE: 'etcdv3',
      TYPHA_ETCDENDPOINTS: 'http://198.18.0.2:2379',
      TYPHA_SERVERHOST: '198.18.0.2',
      TYPHA_SERVERPORT: '5473',
      TYPHA_PROMETHEUSMETRICSENABLED: 'true',
      TYPHA_PROMETHEUSMETRICSPORT: '9093',
    });
    const k = planLab({
      name: 'lab',
      nodes: 1,
      mode: 'vxlan',
      datastore: 'kubernetes',
      typha: true,
      stateDir: '/s',
    });
    expect(typhaEnv(k, k.typha!, '/usr/bin')).toMatchObject({
      TYPHA_DATASTORETYPE: 'kubernetes',
      KUBECONFIG: k.kube.kubeconfig,
    });
    const without = planLab({ name: 'lab', nodes: 1, mode: 'bgp', stateDir: '/s' });
    expect(without.typha).toBeUndefined();
    expect(calicoNodeEnv(without, without.nodes[0]!, '/usr/bin').FELIX_TYPHAADDR).toBeUndefined();
  });
  it("calico-node's environment is the DaemonSet's, pointed at the lab", () => {
    const p = planLab({ name: 'lab', nodes: 1, mode: 'bgp', datastore: 'etcdv3', stateDir: '/s' });
    const env = calicoNodeEnv(p, p.nodes[0]!, '/usr/bin');
    expect(env).toMatchObject({
      NODENAME: 'n1',
      CALICO_NETWORKING_BACKEND: 'bird',
      IP: 'autodetect',
      IP_AUTODETECTION_METHOD: 'interface=eth0',
      CALICO_IPV4POOL_CIDR: '198.19.0.0/16',
      CALICO_IPV4POOL_VXLAN: 'Never',
      ETCD_ENDPOINTS: 'http://198.18.0.2:2379',
      KUBECONFIG: p.kube.kubeconfig,
      NAMESPACE: 'kube-system',
      FELIX_HEALTHENABLED: 'true',
      CALICO_VAR_LIB_DIR: '/s/nodes/n1/lib',
      CALICO_VAR_RUN_DIR: '/s/nodes/n1/run',
    });
    const vx = planLab({ name: 'lab', nodes: 1, mode: 'vxlan', stateDir: '/s' });
    expect(calicoNodeEnv(vx, vx.nodes[0]!, '/usr/bin')).toMatchObject({
      CALICO_NETWORKING_BACKEND: 'vxlan',
      CALICO_IPV4POOL_VXLAN: 'Always',
    });
    const ipip = planLab({ name: 'lab', nodes: 1, mode: 'ipip', stateDir: '/s' });
    expect(calicoNodeEnv(ipip, ipip.nodes[0]!, '/usr/bin')).toMatchObject({
      CALICO_NETWORKING_BACKEND: 'bird',
      CLUSTER_TYPE: 'k8s,bgp',
      CALICO_IPV4POOL_IPIP: 'Always',
      CALICO_IPV4POOL_VXLAN: 'Never',
    });
    // The pods' MTU leaves room for the 20-byte IPIP header.
    expect(JSON.parse(pluginConfig(cniConflist(ipip, ipip.nodes[0]!))).mtu).toBe(1480);
  });
  it("each node's CNI config reads that node's nodename file, the lab's etcd and the API server", () => {
    const p = planLab({ name: 'lab', nodes: 2, mode: 'bgp', datastore: 'etcdv3', stateDir: '/s' });
    const conf = JSON.parse(pluginConfig(cniConflist(p, p.nodes[1]!)));
    expect(conf).toEqual({
      cniVersion: '1.0.0',
      name: 'k8s-pod-network',
      type: 'calico',
      log_level: 'info',
      log_file_path: '/s/nodes/n2/cni.log',
      datastore_type: 'etcdv3',
      etcd_endpoints: 'http://198.18.0.2:2379',
      kubernetes: { kubeconfig: '/s/kubeconfig' },
      nodename_file: '/s/nodes/n2/lib/nodename',
      ipam_lock_file: '/s/nodes/n2/ipam.lock',
      service_socket: '/s/nodes/n2/run/cni-plugin.sock',
      mtu: 1500,
      ipam: { type: 'calico-ipam' },
      policy: { type: 'k8s' },
    });
    expect(calicoctlConfigText(p)).toContain('etcdEndpoints: http://198.18.0.2:2379');
    // Pods in a vxlan lab fit inside the VXLAN device's 1450.
    const v = planLab({ name: 'lab', nodes: 2, mode: 'vxlan', stateDir: '/s' });
    expect(JSON.parse(pluginConfig(cniConflist(v, v.nodes[0]!))).mtu).toBe(1450);
  });
  it('a lab on etcd has the API server and kube-controllers too; Calico clients use etcd', () => {
    const p = planLab({ name: 'lab', nodes: 1, mode: 'bgp', datastore: 'etcdv3', stateDir: '/s' });
    expect(p.kube).toEqual({
      apiServerUrl: 'https://198.18.0.2:6443',
      dir: '/s/kube',
      kubeconfig: '/s/kubeconfig',
      log: '/s/kube/kube-apiserver.log',
      etcdPrefix: '/registry',
      controllersLog: '/s/kube-controllers.log',
      controllersStatusFile: '/s/kube-controllers/status.json',
    });
    // The datastore is etcd; the kubeconfig stands in for a pod's in-cluster config, for the BGP
    // password Secrets calico-node reads from the API server.
    expect(calicoNodeEnv(p, p.nodes[0]!, '/usr/bin')).toMatchObject({
      DATASTORE_TYPE: 'etcdv3',
      ETCD_ENDPOINTS: 'http://198.18.0.2:2379',
      KUBECONFIG: '/s/kubeconfig',
      NAMESPACE: 'kube-system',
    });
    expect(kubeControllersEnv(p, '/usr/bin')).toEqual({
      PATH: '/usr/bin',
      DATASTORE_TYPE: 'etcdv3',
      ETCD_ENDPOINTS: 'http://198.18.0.2:2379',
      KUBECONFIG: '/s/kubeconfig',
      ENABLED_CONTROLLERS: 'policy,namespace,serviceaccount,workloadendpoint,node',
      LOG_LEVEL: 'info',
      STATUS_FILE: '/s/kube-controllers/status.json',
    });
    expect(kubePlanOf(p, '`lab kubectl`')).toBe(p.kube);
  });
  it('the Kubernetes datastore is the default; kube-controllers runs only its node controller there', () => {
    const p = planLab({ name: 'lab', nodes: 1, mode: 'bgp', stateDir: '/s' });
    expect(p.datastore).toBe('kubernetes');
    expect(kubeControllersEnv(p, '/usr/bin')).toMatchObject({
      DATASTORE_TYPE: 'kubernetes',
      KUBECONFIG: '/s/kubeconfig',
      ENABLED_CONTROLLERS: 'node',
    });
    expect(kubeControllersEnv(p, '/usr/bin').ETCD_ENDPOINTS).toBeUndefined();
  });
  it('on the Kubernetes datastore every client uses the admin kubeconfig and the fabric address', () => {
    const p = planLab({ name: 'k', nodes: 2, mode: 'vxlan', datastore: 'kubernetes', stateDir: '/s' });
    expect(p.kube.kubeconfig).toBe('/s/kubeconfig');
    const env = calicoNodeEnv(p, p.nodes[0]!, '/usr/bin');
    expect(env).toMatchObject({ DATASTORE_TYPE: 'kubernetes', KUBECONFIG: '/s/kubeconfig', NODENAME: 'n1' });
    expect(env.ETCD_ENDPOINTS).toBeUndefined();
    const conf = JSON.parse(pluginConfig(cniConflist(p, p.nodes[1]!)));
    expect(conf).toMatchObject({
      type: 'calico',
      datastore_type: 'kubernetes',
      kubernetes: { kubeconfig: '/s/kubeconfig' },
      nodename_file: '/s/nodes/n2/lib/nodename',
      policy: { type: 'k8s' },
    });
    expect(conf.etcd_endpoints).toBeUndefined();
    expect(calicoctlConfigText(p)).toBe(
      [
        'apiVersion: projectcalico.org/v3',
        'kind: CalicoAPIConfig',
        'metadata: {}',
        'spec:',
        '  datastoreType: kubernetes',
        '  kubeconfig: /s/kubeconfig',
        '',
      ].join('\n'),
    );
  });
  it('policy-only: no backend, address or pool; Felix on eni…; host-local on each node’s own range', () => {
    const p = planLab({ name: 'po', nodes: 2, mode: 'policy-only', stateDir: '/s' });
    expect(p.datastore).toBe('kubernetes');
    expect(p.nodes.map((n) => n.podCidr)).toEqual(['198.19.1.0/24', '198.19.2.0/24']);
    expect(labInterfacePrefix(p)).toBe('eni');
    const env = calicoNodeEnv(p, p.nodes[0]!, '/usr/bin');
    expect(env).toMatchObject({
      CALICO_NETWORKING_BACKEND: 'none',
      IP: 'none',
      NO_DEFAULT_POOLS: 'true',
      FELIX_INTERFACEPREFIX: 'eni',
      CALICO_CNI_SERVICE_SOCKET: 'none',
      DATASTORE_TYPE: 'kubernetes',
    });
    for (const k of Object.keys(env)) expect(k).not.toMatch(/^CALICO_IPV4POOL_|^IP_AUTODETECTION/);
    const conf = JSON.parse(pluginConfig(cniConflist(p, p.nodes[1]!)));
    expect(conf).toMatchObject({
      type: 'calico',
      datastore_type: 'kubernetes',
      service_socket: '',
      ipam: {
        type: 'host-local',
        ranges: [[{ subnet: '198.19.2.0/24' }]],
        dataDir: '/s/nodes/n2/host-local',
      },
    });
    // The other modes keep Calico's own prefix, pool and IPAM.
    const bgp = planLab({ name: 'lab', nodes: 1, mode: 'bgp', stateDir: '/s' });
    expect(labInterfacePrefix(bgp)).toBeUndefined();
    expect(bgp.nodes[0]!.podCidr).toBeUndefined();
    expect(calicoNodeEnv(bgp, bgp.nodes[0]!, '/usr/bin').FELIX_INTERFACEPREFIX).toBeUndefined();
  });
  it('two subnets: the first half of the nodes on br0, the rest on br1 behind 198.18.1.1; CrossSubnet VXLAN', () => {
    const p = planLab({ name: 'lab', nodes: 3, mode: 'vxlan', topology: 'two-subnets', stateDir: '/s' });
    expect(p.nodes.map((n) => [n.name, n.ip, n.subnet?.bridge, n.subnet?.gateway])).toEqual([
      ['n1', '198.18.0.11', 'br0', '198.18.0.1'],
      ['n2', '198.18.0.12', 'br0', '198.18.0.1'],
      ['n3', '198.18.1.13', 'br1', '198.18.1.1'],
    ]);
    expect(calicoNodeEnv(p, p.nodes[2]!, '/bin')).toMatchObject({
      CALICO_IPV4POOL_VXLAN: 'CrossSubnet',
      IP: 'autodetect',
    });
    const flat = planLab({ name: 'lab', nodes: 3, mode: 'vxlan', stateDir: '/s' });
    expect(calicoNodeEnv(flat, flat.nodes[0]!, '/bin').CALICO_IPV4POOL_VXLAN).toBe('Always');
  });
  it('refuses two subnets without VXLAN, or with one node', () => {
    expect(() =>
      planLab({ name: 'lab', nodes: 3, mode: 'bgp', topology: 'two-subnets', stateDir: '/s' }),
    ).toThrow(
      /--topology two-subnets runs with --mode vxlan .*--mode bgp would leave the pods of one subnet unreachable/,
    );
    expect(() =>
      planLab({ name: 'lab', nodes: 1, mode: 'vxlan', topology: 'two-subnets', stateDir: '/s' }),
    ).toThrow(/needs at least 2 nodes/);
  });
  it('--tls: etcd over https; every etcd client names the CA, client certificate and key', () => {
    const p = planLab({ name: 'lab', nodes: 1, mode: 'bgp', datastore: 'etcdv3', tls: true, stateDir: '/s' });
    expect(p.etcdUrl).toBe('https://198.18.0.2:2379');
    const files = {
      ca: '/s/etcd-tls/ca.pem',
      cert: '/s/etcd-tls/client.pem',
      key: '/s/etcd-tls/client-key.pem',
    };
    expect(calicoNodeEnv(p, p.nodes[0]!, '/bin')).toMatchObject({
      ETCD_ENDPOINTS: 'https://198.18.0.2:2379',
      ETCD_CA_CERT_FILE: files.ca,
      ETCD_CERT_FILE: files.cert,
      ETCD_KEY_FILE: files.key,
    });
    expect(kubeControllersEnv(p, '/bin')).toMatchObject({ ETCD_CERT_FILE: files.cert });
    expect(JSON.parse(pluginConfig(cniConflist(p, p.nodes[0]!)))).toMatchObject({
      etcd_endpoints: 'https://198.18.0.2:2379',
      etcd_ca_cert_file: files.ca,
      etcd_cert_file: files.cert,
      etcd_key_file: files.key,
    });
    expect(calicoctlConfigText(p)).toContain(`  etcdKeyFile: ${files.key}\n`);
    const plain = planLab({ name: 'lab', nodes: 1, mode: 'bgp', datastore: 'etcdv3', stateDir: '/s' });
    expect(plain.etcdUrl).toBe('http://198.18.0.2:2379');
    expect(JSON.stringify(calicoNodeEnv(plain, plain.nodes[0]!, '/bin'))).not.toContain('CERT_FILE');
  });
  it('--ip-family dual: IPv6 fabric addresses, IP6 autodetected, the IPv6 pool, both families assigned', () => {
    const p = planLab({ name: 'ds1', nodes: 2, mode: 'bgp', ipFamily: 'dual', stateDir: '/s' });
    expect(labFamilies(p)).toEqual([4, 6]);
    expect(p.nodes.map((n) => [n.ip, n.ip6])).toEqual([
      ['198.18.0.11', 'fd00:18::11'],
      ['198.18.0.12', 'fd00:18::12'],
    ]);
    expect(calicoNodeEnv(p, p.nodes[0]!, '/usr/bin')).toMatchObject({
      IP: 'autodetect',
      IP6: 'autodetect',
      IP6_AUTODETECTION_METHOD: 'interface=eth0',
      CALICO_IPV4POOL_CIDR: '198.19.0.0/16',
      CALICO_IPV6POOL_CIDR: 'fd00:19::/64',
      CALICO_IPV6POOL_BLOCK_SIZE: '122',
      CALICO_IPV6POOL_VXLAN: 'Never',
      FELIX_IPV6SUPPORT: 'true',
    });
    expect(JSON.parse(pluginConfig(cniConflist(p, p.nodes[0]!))).ipam).toEqual({
      type: 'calico-ipam',
      assign_ipv4: 'true',
      assign_ipv6: 'true',
    });
    const vx = planLab({ name: 'ds2', nodes: 2, mode: 'vxlan', ipFamily: 'dual', stateDir: '/s' });
    expect(calicoNodeEnv(vx, vx.nodes[0]!, '/usr/bin')).toMatchObject({ CALICO_IPV6POOL_VXLAN: 'Always' });
  });
  it('--ip-family 6: no IPv4 pool or address; --ip-family 4 (default) is IPv4 only as before', () => {
    const p = planLab({ name: 'ds1', nodes: 2, mode: 'bgp', ipFamily: '6', stateDir: '/s' });
    expect(calicoNodeEnv(p, p.nodes[0]!, '/usr/bin')).toMatchObject({
      IP: 'none',
      IP6: 'autodetect',
      CALICO_IPV4POOL_CIDR: 'none',
      FELIX_IPV6SUPPORT: 'true',
    });
    expect(JSON.parse(pluginConfig(cniConflist(p, p.nodes[0]!))).ipam).toMatchObject({
      assign_ipv4: 'false',
      assign_ipv6: 'true',
    });
    const v4 = planLab({ name: 'lab', nodes: 1, mode: 'bgp', stateDir: '/s' });
    expect(v4.ipFamily).toBeUndefined();
    expect(v4.nodes[0]!.ip6).toBeUndefined();
    const env = calicoNodeEnv(v4, v4.nodes[0]!, '/usr/bin');
    expect(env.FELIX_IPV6SUPPORT).toBe('false');
    expect(env.IP6).toBeUndefined();
    expect(JSON.parse(pluginConfig(cniConflist(v4, v4.nodes[0]!))).ipam).toEqual({ type: 'calico-ipam' });
  });
  it('refuses IPv6 pods where the mode cannot carry them', () => {
    const plan = (mode: 'ipip' | 'vxlan' | 'policy-only', ipFamily: '6' | 'dual') => () =>
      planLab({ name: 'x', nodes: 2, mode, ipFamily, stateDir: '/s' });
    expect(plan('ipip', 'dual')).toThrow(
      /--ip-family dual runs with --mode bgp or vxlan.*IPIP cannot carry IPv6/,
    );
    expect(plan('vxlan', '6')).toThrow(/--ip-family 6 runs with --mode bgp, got --mode vxlan/);
    expect(plan('policy-only', 'dual')).toThrow(/--ip-family dual runs with --mode bgp or vxlan/);
  });
  it('refuses policy-only on etcd', () => {
    expect(() =>
      planLab({ name: 'lab', nodes: 1, mode: 'policy-only', datastore: 'etcdv3', stateDir: '/s' }),
    ).toThrow(/policy-only runs on the Kubernetes datastore/);
  });
  it('refuses a node count outside 1…50', () => {
    expect(() => planLab({ name: 'lab', nodes: 0, mode: 'bgp', stateDir: '/s' })).toThrow(/1 to 50/);
    expect(() => planLab({ name: 'lab', nodes: 51, mode: 'bgp', stateDir: '/s' })).toThrow(/1 to 50/);
  });
});
