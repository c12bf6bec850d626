/**
 * kube-controllers: keep the Calico model in step with Kubernetes. `KubeControllers` runs the
 * chosen controllers; `parseEnabledControllers` / `defaultControllers` choose them as upstream does.
 */
export {
  CONTROLLER_NAMES,
  type ControllerName,
  defaultControllers,
  IMPLEMENTED,
  parseEnabledControllers,
} from './config.js';
export {
  KUBE_CONTROLLERS_ERROR_CODES,
  KubeControllersError,
  type KubeControllersErrorCode,
} from './errors.js';
export { type IpamMetricsSnapshot, ipamMetrics, NO_POOL, type PoolRef, poolOf } from './ipam-metrics.js';
export { type ControllerStatus, KubeControllers, type KubeControllersOptions } from './kube-controllers.js';
export {
  type ControllerMetrics,
  controllerMetrics,
  type Labels,
  Metric,
  MetricsRegistry,
  type MetricType,
} from './metrics.js';
export { type MetricsServer, registerProcessMetrics, serveMetrics } from './metrics-server.js';
export {
  MirrorController,
  type MirrorControllerOptions,
  type ReconcileReport,
} from './mirror-controller.js';
export { NodeController, type NodeControllerOptions, podAddresses } from './node-controller.js';
export {
  autoHostEndpoint,
  autoHostEndpointName,
  CREATED_BY_LABEL,
  CREATED_BY_VALUE,
  DEFAULT_ALLOW_PROFILE,
  isAutoHostEndpoint,
  KUBE_LABELS_ANNOTATION,
  kubernetesNodeName,
  nodeExpectedIPs,
  planHostEndpoints,
  syncedNodeLabels,
} from './node-sync.js';
export { type MirrorPlan, planMirror, resourceKeyOf } from './reconcile.js';
export { ReconcileLoop, type ReconcileLoopOptions } from './reconcile-loop.js';
export {
  decodePod,
  endpointLabels,
  type SlimObject,
  slimObject,
  WepLabelController,
  type WepLabelControllerOptions,
} from './wep-label-controller.js';
