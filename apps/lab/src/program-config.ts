/**
 * What each program of the lab is given, from the plan (pure): the environments of calico-node,
 * calico-kube-controllers, calico-typha and the lab's own clients (upstream's variable names),
 * the CNI network configuration list of a node, and calicoctl.cfg. plan.ts decides the layout;
 * this file says how each program is pointed at it.
 */
import { join } from 'node:path';
import {
  ETCD_IP,
  type LabPlan,
  labFamilies,
  type NodePlan,
  POD_POOL,
  POD_POOL6,
  POLICY_ONLY_INTERFACE_PREFIX,
  TYPHA_PORT,
  type TyphaPlan,
  usesBird,
} from './plan.js';

/** The client's etcd TLS settings of a client config (ClientConfig field names). */
export function etcdTlsClientConfig(plan: LabPlan): {
  etcdCACertFile?: string;
  etcdCertFile?: string;
  etcdKeyFile?: string;
} {
  const t = plan.etcdTls;
  return t ? { etcdCACertFile: t.caFile, etcdCertFile: t.certFile, etcdKeyFile: t.keyFile } : {};
}

/** The datastore half of a client's environment (upstream's variable names). */
export function datastoreEnv(plan: LabPlan): Record<string, string> {
  return plan.datastore === 'kubernetes'
    ? { DATASTORE_TYPE: 'kubernetes', KUBECONFIG: plan.kube.kubeconfig }
    : {
        DATASTORE_TYPE: 'etcdv3',
        ETCD_ENDPOINTS: plan.etcdUrl,
        ...(plan.etcdTls
          ? {
              ETCD_CA_CERT_FILE: plan.etcdTls.caFile,
              ETCD_CERT_FILE: plan.etcdTls.certFile,
              ETCD_KEY_FILE: plan.etcdTls.keyFile,
            }
          : {}),
      };
}

/**
 * calico-kube-controllers' environment: its Deployment's in upstream's manifests, pointed at the lab
 * (the controllers those manifests enable per datastore, named explicitly; the status file its
 * probes read in the state directory).
 */
export function kubeControllersEnv(plan: LabPlan, path: string): Record<string, string> {
  return {
    PATH: path,
    ...datastoreEnv(plan),
    KUBECONFIG: plan.kube.kubeconfig,
    ENABLED_CONTROLLERS:
      plan.datastore === 'kubernetes' ? 'node' : 'policy,namespace,serviceaccount,workloadendpoint,node',
    LOG_LEVEL: 'info',
    STATUS_FILE: plan.kube.controllersStatusFile,
  };
}

/**
 * calico-typha's environment (upstream's `TYPHA_*` names): the lab's datastore, listening on the
 * etcd namespace's address, health and Prometheus metrics on.
 */
export function typhaEnv(plan: LabPlan, typha: TyphaPlan, path: string): Record<string, string> {
  return {
    PATH: path,
    ...datastoreEnv(plan),
    TYPHA_DATASTORETYPE: plan.datastore,
    ...(plan.datastore === 'etcdv3' ? { TYPHA_ETCDENDPOINTS: plan.etcdUrl } : {}),
    TYPHA_SERVERHOST: ETCD_IP,
    TYPHA_SERVERPORT: String(TYPHA_PORT),
    TYPHA_LOGSEVERITYSCREEN: 'info',
    TYPHA_PROMETHEUSMETRICSENABLED: 'true',
    TYPHA_PROMETHEUSMETRICSHOST: ETCD_IP,
    TYPHA_PROMETHEUSMETRICSPORT: String(typha.metricsPort),
  };
}

/**
 * calico-node's networking half of the environment: BIRD or VXLAN with the lab's pool, or (policy
 * only, as deploy/manifests/calico-policy-only.yaml sets it) no backend, no address, no pool, and
 * Felix on the other CNI's interfaces.
 */
function networkingEnv(plan: LabPlan): Record<string, string> {
  if (plan.mode === 'policy-only') {
    return {
      CALICO_NETWORKING_BACKEND: 'none',
      CLUSTER_TYPE: 'k8s',
      IP: 'none',
      NO_DEFAULT_POOLS: 'true',
      FELIX_INTERFACEPREFIX: POLICY_ONLY_INTERFACE_PREFIX,
      // The pods' CNI runs on its own: nothing of Calico's to serve it.
      CALICO_CNI_SERVICE_SOCKET: 'none',
    };
  }
  const families = labFamilies(plan);
  const v4 = families.includes(4);
  const v6 = families.includes(6);
  return {
    CALICO_NETWORKING_BACKEND: usesBird(plan.mode) ? 'bird' : 'vxlan',
    CLUSTER_TYPE: usesBird(plan.mode) ? 'k8s,bgp' : 'k8s,vxlan',
    IP: v4 ? 'autodetect' : 'none',
    IP_AUTODETECTION_METHOD: 'interface=eth0',
    ...(v6
      ? {
          IP6: 'autodetect',
          IP6_AUTODETECTION_METHOD: 'interface=eth0',
          CALICO_IPV6POOL_CIDR: POD_POOL6,
          CALICO_IPV6POOL_BLOCK_SIZE: '122',
          CALICO_IPV6POOL_VXLAN: plan.mode === 'vxlan' ? 'Always' : 'Never',
          CALICO_IPV6POOL_NAT_OUTGOING: 'false',
        }
      : {}),
    FELIX_IPV6SUPPORT: v6 ? 'true' : 'false',
    CALICO_IPV4POOL_CIDR: v4 ? POD_POOL : 'none',
    CALICO_IPV4POOL_BLOCK_SIZE: '26',
    CALICO_IPV4POOL_IPIP: plan.mode === 'ipip' ? 'Always' : 'Never',
    CALICO_IPV4POOL_VXLAN:
      plan.mode === 'vxlan' ? (plan.topology === 'two-subnets' ? 'CrossSubnet' : 'Always') : 'Never',
    // Nothing in the lab leads outside it; no SNAT needed.
    CALICO_IPV4POOL_NAT_OUTGOING: 'false',
  };
}

/** Where calico-node reads BGP password Secrets (its `NAMESPACE`), as in upstream's manifests. */
export const LAB_SECRETS_NAMESPACE = 'kube-system';

/** The environment calico-node runs with on a lab node: the DaemonSet's, pointed at the lab. */
export function calicoNodeEnv(plan: LabPlan, node: NodePlan, path: string): Record<string, string> {
  return {
    PATH: path,
    NODENAME: node.name,
    CALICO_K8S_NODE_REF: node.name,
    ...datastoreEnv(plan),
    // On etcd too, as a pod's in-cluster config would: BGP password Secrets are read from the API.
    KUBECONFIG: plan.kube.kubeconfig,
    NAMESPACE: LAB_SECRETS_NAMESPACE,
    FELIX_HEALTHENABLED: 'true',
    // --typha: Felix and BIRD follow Typha instead of the datastore.
    ...(plan.typha ? { FELIX_TYPHAADDR: plan.typha.addr } : {}),
    // IPv4 only unless the lab has IPv6 pods (networkingEnv says so).
    FELIX_IPV6SUPPORT: 'false',
    ...networkingEnv(plan),
    FELIX_LOGSEVERITYSCREEN: 'info',
    FELIX_DEFAULTENDPOINTTOHOSTACTION: 'ACCEPT',
    // A file that does not exist: the host's /etc/calico/felix.cfg must not leak into the lab.
    FELIX_CONFIGFILE: join(node.dir, 'felix.cfg'),
    CALICO_VAR_LIB_DIR: node.libDir,
    CALICO_VAR_RUN_DIR: node.runDir,
    CALICO_BIRD_CONFIG_DIR: node.birdDir,
  };
}

/**
 * Where a node's CNI plugins are: the lab's one directory of links to the built plugin, or, with
 * `--images`, the node's own directory that install-cni filled from the cni image.
 */
export function nodeCniBinDir(plan: LabPlan, node: NodePlan): string {
  return plan.images ? join(node.dir, 'cni-bin') : plan.cniBinDir;
}

/**
 * The CNI network configuration list installed on a node (upstream's 10-calico.conflist, trimmed).
 * policy-only: the pods' own CNI, standing in for the cloud's: the calico plugin on its own (no
 * plugin service) with host-local IPAM on the node's pod range, as Canal runs it, its state in the
 * node's directory (host-local's default, /var/lib/cni, is the host's, shared by every lab node).
 */
export function cniConflist(plan: LabPlan, node: NodePlan): Record<string, unknown> {
  if (plan.mode === 'policy-only') {
    return {
      name: 'k8s-pod-network',
      cniVersion: '1.0.0',
      plugins: [
        {
          type: 'calico',
          log_level: 'info',
          log_file_path: join(node.dir, 'cni.log'),
          datastore_type: 'kubernetes',
          kubernetes: { kubeconfig: plan.kube.kubeconfig },
          nodename_file: join(node.libDir, 'nodename'),
          ipam_lock_file: join(node.dir, 'ipam.lock'),
          service_socket: '',
          mtu: 1500,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: node.podCidr }]],
            dataDir: join(node.dir, 'host-local'),
          },
          policy: { type: 'k8s' },
        },
      ],
    };
  }
  return {
    name: 'k8s-pod-network',
    cniVersion: '1.0.0',
    plugins: [
      {
        type: 'calico',
        log_level: 'info',
        log_file_path: join(node.dir, 'cni.log'),
        // Both datastores: the plugin reads the Pod (labels, service account, ports, annotations)
        // through this kubeconfig, reachable from every node over the fabric.
        ...(plan.datastore === 'kubernetes'
          ? { datastore_type: 'kubernetes' }
          : {
              datastore_type: 'etcdv3',
              etcd_endpoints: plan.etcdUrl,
              ...(plan.etcdTls
                ? {
                    etcd_ca_cert_file: plan.etcdTls.caFile,
                    etcd_cert_file: plan.etcdTls.certFile,
                    etcd_key_file: plan.etcdTls.keyFile,
                  }
                : {}),
            }),
        kubernetes: { kubeconfig: plan.kube.kubeconfig },
        nodename_file: join(node.libDir, 'nodename'),
        ipam_lock_file: join(node.dir, 'ipam.lock'),
        // The node's calico-node serves the plugin here (its CALICO_VAR_RUN_DIR).
        service_socket: join(node.runDir, 'cni-plugin.sock'),
        // What Felix works out for the fabric's 1500 (less 50 for the VXLAN header, 20 for IPIP's;
        // the smallest of the encapsulations in use, as Felix's MTU file says). Named here
        // because the plugin's fallback, /var/lib/calico/mtu, is the host's, shared by every lab node.
        // IPv6 VXLAN's outer header is 20 bytes longer: 70 in all.
        mtu:
          plan.mode === 'vxlan'
            ? labFamilies(plan).includes(6)
              ? 1430
              : 1450
            : plan.mode === 'ipip'
              ? 1480
              : 1500,
        ipam: {
          type: 'calico-ipam',
          // With IPv6 pods: which families to assign, as strings, as upstream's conflist writes them.
          ...(labFamilies(plan).includes(6)
            ? {
                assign_ipv4: String(labFamilies(plan).includes(4)),
                assign_ipv6: 'true',
              }
            : {}),
        },
        policy: { type: 'k8s' },
      },
    ],
  };
}

/**
 * The interface prefix list of the lab's pods (FELIX_INTERFACEPREFIX): `eni` in policy-only mode,
 * undefined (Calico's `cali`) otherwise. The CNI plugin names the host interfaces with it, and
 * every lab client of the Kubernetes datastore reads endpoints with it, as calico-node does.
 */
export function labInterfacePrefix(plan: LabPlan): string | undefined {
  return plan.mode === 'policy-only' ? POLICY_ONLY_INTERFACE_PREFIX : undefined;
}

/** What a runtime passes on stdin for one plugin of a conflist: the plugin with name and version. */
export function pluginConfig(conflist: Record<string, unknown>, index = 0): string {
  const plugins = conflist.plugins as Record<string, unknown>[];
  return JSON.stringify({ cniVersion: conflist.cniVersion, name: conflist.name, ...plugins[index] });
}

export function calicoctlConfigText(plan: LabPlan): string {
  return [
    'apiVersion: projectcalico.org/v3',
    'kind: CalicoAPIConfig',
    'metadata: {}',
    'spec:',
    ...(plan.datastore === 'kubernetes'
      ? ['  datastoreType: kubernetes', `  kubeconfig: ${plan.kube.kubeconfig}`]
      : [
          '  datastoreType: etcdv3',
          `  etcdEndpoints: ${plan.etcdUrl}`,
          ...(plan.etcdTls
            ? [
                `  etcdCACertFile: ${plan.etcdTls.caFile}`,
                `  etcdCertFile: ${plan.etcdTls.certFile}`,
                `  etcdKeyFile: ${plan.etcdTls.keyFile}`,
              ]
            : []),
        ]),
    '',
  ].join('\n');
}
