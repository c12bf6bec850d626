/**
 * The `metadata` block every resource shares, as a strict schema whose fields follow k8s
 * `ObjectMeta`'s Go order (`k8s.io/apimachinery/pkg/apis/meta/v1/types.go`), the order they are
 * stored in.
 */
import * as z from 'zod';
import { labelMap } from './common.js';
import { goAlways, goField, goVal } from './go-encoding.js';
import { lazySchema } from './lazy-schema.js';
import { annotationMap } from './rule.js';

export const ownerReferenceSchema = lazySchema(() =>
  z.strictObject({
    apiVersion: goAlways(z.string()),
    kind: goAlways(z.string()),
    name: goAlways(z.string()),
    uid: goAlways(z.string()),
    controller: z.boolean().optional(),
    blockOwnerDeletion: z.boolean().optional(),
  }),
);

/** A `metav1.Time`: RFC 3339 in UTC, whole seconds. */
const time = () => goField(z.string().nullable(), { value: 'time' });

export const objectMetaSchema = lazySchema(() =>
  z.strictObject({
    name: z.string(),
    generateName: z.string().optional(),
    namespace: z.string().optional(),
    selfLink: z.string().optional(),
    uid: z.string().optional(),
    resourceVersion: z.string().optional(),
    generation: goVal(z.number().int()),
    // A Go struct (not a pointer): always stored, `null` when unset.
    creationTimestamp: goAlways(time().optional()),
    deletionTimestamp: time().optional(),
    deletionGracePeriodSeconds: z.number().int().optional(),
    labels: labelMap().optional(),
    annotations: annotationMap().optional(),
    ownerReferences: z.array(ownerReferenceSchema).optional(),
    finalizers: z.array(z.string()).optional(),
    managedFields: z.array(z.unknown()).optional(),
  }),
);
