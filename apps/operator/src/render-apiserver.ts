/**
 * calico-apiserver as the operator runs it for the `APIServer` resource (pure): the
 * projectcalico.org/v3 API through the Kubernetes aggregation layer, in calico-system with
 * upstream's names.
 *
 *   ServiceAccount calico-apiserver
 *   ClusterRole calico-crds + binding calico-apiserver-access-calico-crds: the crd.projectcalico.org
 *     objects it stores through, the reads calicoctl's checks make (namespaces, service accounts,
 *     Kubernetes NetworkPolicies), and Pods and Nodes (WorkloadEndpoint and Node are served)
 *   ClusterRoleBinding calico-apiserver-delegate-auth → system:auth-delegator (TokenReview,
 *     SubjectAccessReview: the main API server decides who may do what)
 *   RoleBinding kube-system/calico-apiserver-auth-reader → extension-apiserver-authentication-reader
 *     (the front proxy's CA and header names)
 *   Secret calico-apiserver-certs: its serving certificate from the operator's CA (certs.ts)
 *   Deployment calico-apiserver (port 5443, /readyz, /livez), Service calico-api (443 → 5443),
 *     PodDisruptionBudget
 *   APIService v3.projectcalico.org → calico-system/calico-api, caBundle: the operator's CA
 *
 * Where this differs from upstream: the pods run on the host network (upstream does so only when
 * the cluster's own CNI is not Calico). The API server dials the Service's endpoints itself; on a
 * host network they are node addresses, which every control plane reaches, where a pod address is
 * only reached from hosts that run calico-node. With host ports, two replicas need two nodes, so
 * there are min(2, nodes). And no `calico-tiered-policy-passthrough` role: upstream grants every
 * user policy verbs there and checks tier permissions inside its API server; this one checks only
 * what Kubernetes RBAC says for the projectcalico.org resource, so it grants nothing extra.
 */
import { KUBE_DATASTORE_READ_WRITE_RULES } from '@calico-ts/datastore/kube';
import { APISERVER_SECRET, CA_BUNDLE } from './certs.js';
import { componentImage } from './images.js';
import type { ResolvedInstallation } from './installation.js';
import { CALICO_NAMESPACE, type KubeObject } from './kube-object.js';
import { CA_BUNDLE_DIR } from './render-typha.js';

export const APISERVER_NAME = 'calico-apiserver';
export const APISERVER_SERVICE = 'calico-api';
export const APISERVER_PORT = 5443;
export const APISERVICE_NAME = 'v3.projectcalico.org';
export const APISERVER_CERTS_HASH_ANNOTATION = 'hash.operator.tigera.io/calico-apiserver-certs';
const CERTS_DIR = '/calico-apiserver-certs';
const RBAC = 'rbac.authorization.k8s.io';

/** What the render needs beyond the Installation. */
export interface ApiServerFacts {
  readonly nodeCount: number;
  /** The operator's CA certificate (PEM): the APIService's caBundle. */
  readonly caPem: string;
  /** A hash of the serving certificate: new certificates roll the pods. */
  readonly certsHash: string;
}

export function apiServerReplicas(nodeCount: number): number {
  return Math.max(1, Math.min(2, nodeCount));
}

export function renderApiServer(cfg: ResolvedInstallation, facts: ApiServerFacts): KubeObject[] {
  const ns = CALICO_NAMESPACE;
  const labels = { apiserver: 'true', 'k8s-app': APISERVER_NAME };
  const sa = { kind: 'ServiceAccount', name: APISERVER_NAME, namespace: ns };
  const probe = (path: string, periodSeconds: number) => ({
    httpGet: { path, port: APISERVER_PORT, scheme: 'HTTPS' },
    periodSeconds,
    timeoutSeconds: 5,
  });
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: APISERVER_NAME, namespace: ns } },
    {
      apiVersion: `${RBAC}/v1`,
      kind: 'ClusterRole',
      metadata: { name: 'calico-crds' },
      // What calico-apiserver's client needs: Node and WorkloadEndpoint are served too, and are
      // written as the Kubernetes Node and Pod on this datastore.
      rules: KUBE_DATASTORE_READ_WRITE_RULES,
    },
    {
      apiVersion: `${RBAC}/v1`,
      kind: 'ClusterRoleBinding',
      metadata: { name: 'calico-apiserver-access-calico-crds' },
      roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'calico-crds' },
      subjects: [sa],
    },
    {
      apiVersion: `${RBAC}/v1`,
      kind: 'ClusterRoleBinding',
      metadata: { name: 'calico-apiserver-delegate-auth' },
      roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'system:auth-delegator' },
      subjects: [sa],
    },
    {
      apiVersion: `${RBAC}/v1`,
      kind: 'RoleBinding',
      metadata: { name: 'calico-apiserver-auth-reader', namespace: 'kube-system' },
      roleRef: { apiGroup: RBAC, kind: 'Role', name: 'extension-apiserver-authentication-reader' },
      subjects: [sa],
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: APISERVER_NAME, namespace: ns, labels },
      spec: {
        replicas: apiServerReplicas(facts.nodeCount),
        revisionHistoryLimit: 2,
        selector: { matchLabels: { apiserver: 'true' } },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } },
        template: {
          metadata: {
            name: APISERVER_NAME,
            namespace: ns,
            labels,
            annotations: { [APISERVER_CERTS_HASH_ANNOTATION]: facts.certsHash },
          },
          spec: {
            nodeSelector: { 'kubernetes.io/os': 'linux' },
            tolerations: [
              { key: 'node-role.kubernetes.io/master', effect: 'NoSchedule' },
              { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' },
            ],
            hostNetwork: true,
            dnsPolicy: 'ClusterFirstWithHostNet',
            serviceAccountName: APISERVER_NAME,
            ...(cfg.imagePullSecrets.length > 0
              ? { imagePullSecrets: cfg.imagePullSecrets.map((name) => ({ name })) }
              : {}),
            volumes: [
              { name: APISERVER_SECRET, secret: { secretName: APISERVER_SECRET } },
              { name: CA_BUNDLE, configMap: { name: CA_BUNDLE } },
            ],
            containers: [
              {
                name: APISERVER_NAME,
                image: componentImage(cfg, 'apiserver'),
                imagePullPolicy: 'IfNotPresent',
                args: [
                  `--secure-port=${APISERVER_PORT}`,
                  `--tls-private-key-file=${CERTS_DIR}/tls.key`,
                  `--tls-cert-file=${CERTS_DIR}/tls.crt`,
                ],
                env: [
                  { name: 'DATASTORE_TYPE', value: 'kubernetes' },
                  { name: 'LOG_LEVEL', value: 'info' },
                ],
                envFrom: [{ configMapRef: { name: 'kubernetes-services-endpoint', optional: true } }],
                ports: [{ containerPort: APISERVER_PORT, name: 'apiserver', protocol: 'TCP' }],
                readinessProbe: probe('/readyz', 10),
                livenessProbe: { ...probe('/livez', 10), initialDelaySeconds: 10 },
                volumeMounts: [
                  { name: APISERVER_SECRET, mountPath: CERTS_DIR, readOnly: true },
                  { name: CA_BUNDLE, mountPath: CA_BUNDLE_DIR, readOnly: true },
                ],
              },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: APISERVER_SERVICE, namespace: ns, labels: { 'k8s-app': APISERVER_NAME } },
      spec: {
        ports: [{ name: 'apiserver', port: 443, protocol: 'TCP', targetPort: APISERVER_PORT }],
        selector: { apiserver: 'true' },
      },
    },
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: APISERVER_NAME, namespace: ns },
      spec: { maxUnavailable: 1, selector: { matchLabels: { apiserver: 'true' } } },
    },
    {
      apiVersion: 'apiregistration.k8s.io/v1',
      kind: 'APIService',
      metadata: { name: APISERVICE_NAME },
      spec: {
        group: 'projectcalico.org',
        version: 'v3',
        groupPriorityMinimum: 1500,
        versionPriority: 200,
        service: { name: APISERVER_SERVICE, namespace: ns, port: 443 },
        caBundle: Buffer.from(facts.caPem).toString('base64'),
      },
    },
  ];
}

/** The DNS names the serving certificate carries: the Service's, as the aggregator dials it. */
export function apiServerDnsNames(): string[] {
  const s = `${APISERVER_SERVICE}.${CALICO_NAMESPACE}`;
  return [APISERVER_SERVICE, s, `${s}.svc`, `${s}.svc.cluster.local`];
}
