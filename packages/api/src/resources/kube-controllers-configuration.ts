/**
 * KubeControllersConfiguration (upstream `kubecontrollersconfig.go`, clientv3's
 * `validateAndFillDefaults`): one per cluster, named `default`; the spec and the status the
 * controllers write back (the running configuration and its environment).
 */
import * as z from 'zod';
import type { ResourceObject } from '../meta.js';
import { LOG_LEVELS } from './bgp.js';
import {
  asArr,
  asObj,
  type CheckContext,
  checkSingletonName,
  cidrOrIP,
  duration,
  enabledDisabled,
  intBetween,
  labelMap,
  nonEmpty,
  oneOf,
  selector,
  subdomainName,
} from './common.js';
import { goAlways } from './go-encoding.js';
import { lazySchema } from './lazy-schema.js';

const dur = () => duration();

const reconciler = () => z.strictObject({ reconcilerPeriod: dur().optional() });

export const kubeControllersConfigurationSpecSchema = lazySchema(() =>
  z.strictObject({
    logSeverityScreen: oneOf(LOG_LEVELS).optional(),
    healthChecks: enabledDisabled().optional(),
    etcdV3CompactionPeriod: dur().optional(),
    prometheusMetricsPort: intBetween(0, 65535).optional(),
    // A Go struct without omitempty: stored as {} when unset.
    controllers: goAlways(
      z
        .strictObject({
          node: z
            .strictObject({
              reconcilerPeriod: dur().optional(),
              syncLabels: enabledDisabled().optional(),
              hostEndpoint: z
                .strictObject({
                  autoCreate: enabledDisabled().optional(),
                  createDefaultHostEndpoint: enabledDisabled().optional(),
                  templates: z
                    .array(
                      z.strictObject({
                        generateName: subdomainName().optional(),
                        interfaceCIDRs: z.array(cidrOrIP()).optional(),
                        interfacePattern: z.string().optional(),
                        labels: labelMap().optional(),
                        nodeSelector: selector().optional(),
                      }),
                    )
                    .optional(),
                })
                .optional(),
              leakGracePeriod: dur().optional(),
            })
            .optional(),
          policy: reconciler().optional(),
          workloadEndpoint: reconciler().optional(),
          serviceAccount: reconciler().optional(),
          namespace: reconciler().optional(),
          loadBalancer: z
            .strictObject({ assignIPs: oneOf(['AllServices', 'RequestedServicesOnly']).optional() })
            .optional(),
          policyMigration: z.strictObject({ enabled: enabledDisabled().optional() }).optional(),
        })
        .optional(),
    ),
    debugProfilePort: intBetween(0, 65535).optional(),
  }),
);
/** kube-controllers' settings: log level, health checks, and each controller's own. */
export type KubeControllersConfigurationSpec = z.infer<typeof kubeControllersConfigurationSpecSchema>;
/** Upstream's `KubeControllersConfigurationStatus`, a Go value stored as {} when empty. */
export const kubeControllersConfigurationStatusSchema = lazySchema(() =>
  z.strictObject({
    runningConfig: kubeControllersConfigurationSpecSchema.optional(),
    environmentVars: z.record(z.string(), z.string()).optional(),
  }),
);
/** What the controllers report back: the configuration they run with and where it came from. */
export interface KubeControllersConfigurationStatus {
  /** The configuration the controllers run with: the spec merged with their environment. */
  runningConfig?: KubeControllersConfigurationSpec;
  /** The environment variables that set part of the running configuration. */
  environmentVars?: Record<string, string>;
}
/** A `projectcalico.org/v3` KubeControllersConfiguration, one per cluster, named `default`. */
export type KubeControllersConfiguration = ResourceObject<
  'KubeControllersConfiguration',
  KubeControllersConfigurationSpec
> & {
  status?: KubeControllersConfigurationStatus;
};

export function checkKubeControllersConfiguration(spec: unknown, ctx: CheckContext): void {
  checkSingletonName('KubeControllersConfiguration')(spec, ctx);
  asArr(asObj(asObj(asObj(asObj(spec)?.controllers)?.node)?.hostEndpoint)?.templates)?.forEach((t, i) => {
    const o = asObj(t);
    if (!o) return;
    const p = `spec.controllers.node.hostEndpoint.templates[${i}]`;
    if ((asArr(o.interfaceCIDRs)?.length ?? 0) === 0 && nonEmpty(o.interfacePattern) === undefined) {
      ctx.add(p, 'must set interfaceCIDRs or interfacePattern');
    }
    const pattern = nonEmpty(o.interfacePattern);
    if (pattern !== undefined) {
      try {
        new RegExp(pattern);
      } catch {
        ctx.add(`${p}.interfacePattern`, 'must be a valid regular expression');
      }
    }
  });
}

/** Upstream's metrics port for kube-controllers when the configuration names none. */
export const DEFAULT_KUBE_CONTROLLERS_METRICS_PORT = 9094;

/**
 * clientv3's KubeControllersConfiguration defaulting (`validateAndFillDefaults`): metrics port
 * 9094, the node controller's leakGracePeriod 15m, the LoadBalancer controller's assignIPs
 * `AllServices`. (Health checks and the rest are CRD defaults, which etcd mode never applies.)
 */
export function defaultKubeControllersConfiguration(
  c: KubeControllersConfiguration,
): KubeControllersConfiguration {
  const spec = { ...c.spec };
  spec.prometheusMetricsPort ??= DEFAULT_KUBE_CONTROLLERS_METRICS_PORT;
  if (spec.controllers?.node || spec.controllers?.loadBalancer) {
    const controllers = { ...spec.controllers };
    if (controllers.node && controllers.node.leakGracePeriod === undefined) {
      controllers.node = { ...controllers.node, leakGracePeriod: '15m0s' };
    }
    if (controllers.loadBalancer && !controllers.loadBalancer.assignIPs) {
      controllers.loadBalancer = { ...controllers.loadBalancer, assignIPs: 'AllServices' };
    }
    spec.controllers = controllers;
  }
  return { ...c, spec };
}
