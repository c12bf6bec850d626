/**
 * calico-typha as the operator runs it (pure): its ServiceAccount, a read-only ClusterRole (the
 * reads of calico-node's own role: Typha serves calico-node the same data), the Deployment with
 * upstream's names, ports and env (hostNetwork, port 5473 `calico-typha`, health on 9098), its
 * Service and a PodDisruptionBudget. Replicas follow the node count (typha-scale.ts).
 *
 * Felix and Typha authenticate each other as upstream's do: Typha serves with `typha-certs` (CN
 * typha-server) and accepts clients whose certificate the CA in `tigera-ca-bundle` signed with CN
 * typha-client (`node-certs`, certs.ts). A hash of the certificates is a pod-template annotation,
 * so new ones roll the pods.
 */
import { CA_BUNDLE, NODE_CN, TYPHA_SECRET } from './certs.js';
import { componentImage } from './images.js';
import type { ResolvedInstallation } from './installation.js';
import { CALICO_NAMESPACE, type KubeObject } from './kube-object.js';
import { expectedTyphaReplicas } from './typha-scale.js';

export const TYPHA_PORT = 5473;
export const CERTS_HASH_ANNOTATION = 'hash.operator.tigera.io/typha-certs';
/** Where the CA bundle is mounted in Typha and calico-node (upstream's path). */
export const CA_BUNDLE_DIR = '/etc/pki/tls/certs';
export const CA_BUNDLE_FILE = `${CA_BUNDLE_DIR}/tigera-ca-bundle.crt`;
export const TYPHA_HEALTH_PORT = 9098;
const READ = ['get', 'list', 'watch'];

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}

/** The read-only part of calico-node's rules: what Typha's syncers list and watch. */
export function typhaRules(nodeRole: KubeObject): Rule[] {
  return ((nodeRole.rules as Rule[] | undefined) ?? [])
    .filter((r) => r.resourceNames === undefined)
    .map((r) => ({ ...r, verbs: r.verbs.filter((v) => READ.includes(v)) }))
    .filter((r) => r.verbs.length > 0);
}

export function renderTypha(
  cfg: ResolvedInstallation,
  nodeCount: number,
  nodeRole: KubeObject,
  certsHash: string,
): KubeObject[] {
  const ns = CALICO_NAMESPACE;
  const labels = { 'k8s-app': 'calico-typha' };
  const probe = (path: string) => ({
    httpGet: { host: 'localhost', path, port: TYPHA_HEALTH_PORT },
    periodSeconds: 10,
    timeoutSeconds: 10,
  });
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'calico-typha', namespace: ns } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'calico-typha' },
      rules: typhaRules(nodeRole),
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'calico-typha' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'calico-typha' },
      subjects: [{ kind: 'ServiceAccount', name: 'calico-typha', namespace: ns }],
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'calico-typha', namespace: ns, labels },
      spec: {
        replicas: expectedTyphaReplicas(nodeCount),
        revisionHistoryLimit: 2,
        selector: { matchLabels: labels },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: '100%' } },
        template: {
          metadata: { labels, annotations: { [CERTS_HASH_ANNOTATION]: certsHash } },
          spec: {
            volumes: [
              { name: CA_BUNDLE, configMap: { name: CA_BUNDLE } },
              { name: TYPHA_SECRET, secret: { secretName: TYPHA_SECRET } },
            ],
            nodeSelector: { 'kubernetes.io/os': 'linux' },
            tolerations: [{ operator: 'Exists' }],
            hostNetwork: true,
            dnsPolicy: 'ClusterFirstWithHostNet',
            serviceAccountName: 'calico-typha',
            priorityClassName: 'system-cluster-critical',
            terminationGracePeriodSeconds: 30,
            ...(cfg.imagePullSecrets.length > 0
              ? { imagePullSecrets: cfg.imagePullSecrets.map((name) => ({ name })) }
              : {}),
            affinity: {
              podAntiAffinity: {
                preferredDuringSchedulingIgnoredDuringExecution: [
                  {
                    weight: 1,
                    podAffinityTerm: {
                      topologyKey: 'topology.kubernetes.io/zone',
                      labelSelector: { matchLabels: labels },
                    },
                  },
                ],
              },
            },
            containers: [
              {
                name: 'calico-typha',
                image: componentImage(cfg, 'typha'),
                imagePullPolicy: 'IfNotPresent',
                ports: [{ containerPort: TYPHA_PORT, name: 'calico-typha', protocol: 'TCP' }],
                env: [
                  // Upstream's names; only those this Typha reads (not its log-file, syslog and
                  // connection-rebalancing settings, which it does not have).
                  { name: 'TYPHA_LOGSEVERITYSCREEN', value: 'info' },
                  { name: 'TYPHA_DATASTORETYPE', value: 'kubernetes' },
                  { name: 'TYPHA_HEALTHENABLED', value: 'true' },
                  { name: 'TYPHA_HEALTHPORT', value: String(TYPHA_HEALTH_PORT) },
                  { name: 'TYPHA_CAFILE', value: CA_BUNDLE_FILE },
                  { name: 'TYPHA_SERVERCERTFILE', value: `/${TYPHA_SECRET}/tls.crt` },
                  { name: 'TYPHA_SERVERKEYFILE', value: `/${TYPHA_SECRET}/tls.key` },
                  { name: 'TYPHA_CLIENTCN', value: NODE_CN },
                ],
                volumeMounts: [
                  { name: CA_BUNDLE, mountPath: CA_BUNDLE_DIR, readOnly: true },
                  { name: TYPHA_SECRET, mountPath: `/${TYPHA_SECRET}`, readOnly: true },
                ],
                envFrom: [{ configMapRef: { name: 'kubernetes-services-endpoint', optional: true } }],
                livenessProbe: probe('/liveness'),
                readinessProbe: probe('/readiness'),
              },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'calico-typha', namespace: ns, labels },
      spec: {
        ports: [{ port: TYPHA_PORT, protocol: 'TCP', targetPort: 'calico-typha', name: 'calico-typha' }],
        selector: labels,
      },
    },
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'calico-typha', namespace: ns, labels },
      spec: { maxUnavailable: 1, selector: { matchLabels: labels } },
    },
  ];
}
