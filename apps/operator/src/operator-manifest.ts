/**
 * The objects of deploy/manifests/tigera-operator.yaml besides the CRDs (pure): the
 * `tigera-operator` namespace, the operator's ServiceAccount, ClusterRole and binding, and its
 * Deployment as upstream's manifest has it: one replica on the host network (it must run before
 * any pod network exists), tolerating every NoSchedule and NoExecute taint, the
 * `kubernetes-services-endpoint` ConfigMap as optional env, command `operator`.
 *
 * RBAC: what the operator writes (calico-system's objects, the cluster roles it grants, the IP
 * pools, the TigeraStatuses) and reads. It holds `bind` and `escalate` on roles so it can grant
 * calico-node's and kube-controllers' rules without holding each of them.
 */
import { VERSION } from './images.js';

type Obj = Record<string, unknown>;
const WRITE = ['create', 'get', 'list', 'watch', 'update', 'patch', 'delete'];

export function operatorObjects(image = `calico-ts/operator:${VERSION}`): Obj[] {
  const ns = 'tigera-operator';
  const labels = { 'k8s-app': 'tigera-operator' };
  return [
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: ns, labels: { name: ns, 'pod-security.kubernetes.io/enforce': 'privileged' } },
    },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'tigera-operator', namespace: ns } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'tigera-operator' },
      rules: [
        {
          apiGroups: [''],
          resources: [
            'namespaces',
            'serviceaccounts',
            'configmaps',
            'secrets',
            'services',
            'pods',
            'endpoints',
            'events',
          ],
          verbs: WRITE,
        },
        { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['apps'], resources: ['daemonsets', 'deployments'], verbs: WRITE },
        { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: WRITE },
        {
          apiGroups: ['rbac.authorization.k8s.io'],
          resources: ['clusterroles', 'clusterrolebindings', 'roles', 'rolebindings'],
          verbs: [...WRITE, 'bind', 'escalate'],
        },
        { apiGroups: ['apiregistration.k8s.io'], resources: ['apiservices'], verbs: WRITE },
        { apiGroups: ['operator.tigera.io'], resources: ['*'], verbs: WRITE },
        { apiGroups: ['crd.projectcalico.org'], resources: ['*'], verbs: WRITE },
        {
          apiGroups: ['apiextensions.k8s.io'],
          resources: ['customresourcedefinitions'],
          verbs: ['get', 'list', 'watch'],
        },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'tigera-operator' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'tigera-operator' },
      subjects: [{ kind: 'ServiceAccount', name: 'tigera-operator', namespace: ns }],
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'tigera-operator', namespace: ns, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: { name: 'tigera-operator' } },
        template: {
          metadata: { labels: { name: 'tigera-operator', ...labels } },
          spec: {
            nodeSelector: { 'kubernetes.io/os': 'linux' },
            tolerations: [
              { effect: 'NoExecute', operator: 'Exists' },
              { effect: 'NoSchedule', operator: 'Exists' },
            ],
            serviceAccountName: 'tigera-operator',
            terminationGracePeriodSeconds: 60,
            hostNetwork: true,
            dnsPolicy: 'ClusterFirstWithHostNet',
            containers: [
              {
                name: 'tigera-operator',
                image,
                imagePullPolicy: 'IfNotPresent',
                command: ['operator'],
                envFrom: [{ configMapRef: { name: 'kubernetes-services-endpoint', optional: true } }],
              },
            ],
          },
        },
      },
    },
  ];
}
