/**
 * The configuration kinds, one file each: `felix-configuration.ts`,
 * `kube-controllers-configuration.ts`, `cluster-information.ts` (BGPConfiguration is with the
 * other BGP kinds in `bgp.ts`). This file keeps the import path the package's indexes and the
 * registry use.
 */
export {
  type ClusterInformation,
  type ClusterInformationSpec,
  clusterInformationSpecSchema,
} from './cluster-information.js';
export { checkSingletonName } from './common.js';
export {
  checkFelixConfiguration,
  defaultFelixConfiguration,
  FELIX_CONFIGURATION_FIELDS,
  FELIX_POSITION_INFERRED,
  type FelixConfiguration,
  type FelixConfigurationSpec,
  felixConfigurationSpecSchema,
} from './felix-configuration.js';
export {
  checkKubeControllersConfiguration,
  DEFAULT_KUBE_CONTROLLERS_METRICS_PORT,
  defaultKubeControllersConfiguration,
  type KubeControllersConfiguration,
  type KubeControllersConfigurationSpec,
  type KubeControllersConfigurationStatus,
  kubeControllersConfigurationSpecSchema,
  kubeControllersConfigurationStatusSchema,
} from './kube-controllers-configuration.js';
