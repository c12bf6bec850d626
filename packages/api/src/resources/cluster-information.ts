/**
 * ClusterInformation (upstream `clusterinfo.go`): one per cluster, named `default`: the cluster's
 * GUID and type, the Calico version and whether the datastore is ready.
 */
import * as z from 'zod';
import type { ResourceObject } from '../meta.js';
import { lazySchema } from './lazy-schema.js';

export const clusterInformationSpecSchema = lazySchema(() =>
  z.strictObject({
    clusterGUID: z.string().optional(),
    clusterType: z.string().optional(),
    calicoVersion: z.string().optional(),
    datastoreReady: z.boolean().optional(),
    variant: z.string().optional(),
  }),
);
/** The spec of the cluster's ClusterInformation. */
export type ClusterInformationSpec = z.infer<typeof clusterInformationSpecSchema>;
/** A `projectcalico.org/v3` ClusterInformation: facts about the cluster, one per cluster. */
export type ClusterInformation = ResourceObject<'ClusterInformation', ClusterInformationSpec>;
