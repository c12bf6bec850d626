/**
 * Which controllers run, as upstream chooses them (`kube-controllers/pkg/config`):
 * `ENABLED_CONTROLLERS` (comma list; `profile` is an alias of `namespace`; `flannelmigration` only
 * alone; an unknown name is an error), else the KubeControllersConfiguration `default`'s
 * `controllers`, else the defaults of the datastore: etcd `policy,namespace,serviceaccount,
 * workloadendpoint,node`, Kubernetes `node`. Pure.
 */
import { KubeControllersError } from './errors.js';

export const CONTROLLER_NAMES = [
  'node',
  'policy',
  'namespace',
  'workloadendpoint',
  'serviceaccount',
  'loadbalancer',
  'flannelmigration',
] as const;
export type ControllerName = (typeof CONTROLLER_NAMES)[number];

/** What this build runs; the others are refused at start with a message that says so. */
export const IMPLEMENTED: ReadonlySet<ControllerName> = new Set([
  'node',
  'policy',
  'namespace',
  'workloadendpoint',
  'serviceaccount',
]);

/** In the Kubernetes datastore these come from Kubernetes itself; running them would fight it. */
const ETCD_ONLY: ReadonlySet<ControllerName> = new Set([
  'policy',
  'namespace',
  'workloadendpoint',
  'serviceaccount',
]);

export function defaultControllers(datastoreType: 'etcdv3' | 'kubernetes'): ControllerName[] {
  return datastoreType === 'etcdv3'
    ? ['policy', 'namespace', 'serviceaccount', 'workloadendpoint', 'node']
    : ['node'];
}

/** `ENABLED_CONTROLLERS` parsed; throws `config` for an unknown name or a bad combination. */
export function parseEnabledControllers(
  text: string,
  datastoreType: 'etcdv3' | 'kubernetes',
): ControllerName[] {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => (s === 'profile' ? 'namespace' : s));
  const out: ControllerName[] = [];
  for (const n of names) {
    if (!(CONTROLLER_NAMES as readonly string[]).includes(n)) {
      throw new KubeControllersError(
        'config',
        `ENABLED_CONTROLLERS: unknown controller "${n}"; known: ${CONTROLLER_NAMES.join(', ')} (profile = namespace)`,
      );
    }
    if (!out.includes(n as ControllerName)) out.push(n as ControllerName);
  }
  if (out.includes('flannelmigration') && out.length > 1) {
    throw new KubeControllersError('config', 'ENABLED_CONTROLLERS: flannelmigration must run alone');
  }
  if (datastoreType === 'kubernetes') {
    const etcdOnly = out.filter((n) => ETCD_ONLY.has(n));
    if (etcdOnly.length > 0) {
      throw new KubeControllersError(
        'config',
        `ENABLED_CONTROLLERS: ${etcdOnly.join(', ')} run only with the etcd datastore; the Kubernetes datastore reads those objects from Kubernetes itself`,
      );
    }
  }
  return out;
}
