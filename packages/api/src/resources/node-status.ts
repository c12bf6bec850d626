/**
 * `CalicoNodeStatus` (v3 `nodestatus.go`): a request that calico-node report the status of one
 * node (its agents, BGP sessions, routes) every `updatePeriodSeconds`; calico-node fills `status`.
 */
import * as z from 'zod';
import type { ResourceObject } from '../meta.js';
import { asObj, type CheckContext, oneOf } from './common.js';
import { goAlways, goField } from './go-encoding.js';
import { lazySchema } from './lazy-schema.js';

export const NODE_STATUS_CLASSES = ['Agent', 'BGP', 'Routes'] as const;

/** Longest period upstream accepts: one day. */
const MAX_UPDATE_PERIOD_SECONDS = 86_400;

export const calicoNodeStatusSpecSchema = lazySchema(() =>
  z.strictObject({
    node: z.string().optional(),
    classes: z.array(oneOf(NODE_STATUS_CLASSES)).optional(),
    updatePeriodSeconds: z.number().int().min(0).max(MAX_UPDATE_PERIOD_SECONDS).optional(),
  }),
);
export type CalicoNodeStatusSpec = z.infer<typeof calicoNodeStatusSpecSchema>;

const daemonStatus = () =>
  z.strictObject({
    state: oneOf(['Ready', 'NotReady']).optional(),
    version: z.string().optional(),
    routerID: z.string().optional(),
    lastBootTime: z.string().optional(),
    lastReconfigurationTime: z.string().optional(),
  });

const peer = () =>
  z.strictObject({
    peerIP: z.string().optional(),
    type: oneOf(['NodeMesh', 'NodePeer', 'GlobalPeer']).optional(),
    state: oneOf(['Idle', 'Connect', 'Active', 'OpenSent', 'OpenConfirm', 'Established', 'Close']).optional(),
    since: z.string().optional(),
  });

const route = () =>
  z.strictObject({
    type: oneOf(['FIB', 'RIB']).optional(),
    destination: z.string().optional(),
    gateway: z.string().optional(),
    interface: z.string().optional(),
    // A Go struct value: stored as {} when unset.
    learnedFrom: goAlways(
      z
        .strictObject({
          sourceType: oneOf(['Kernel', 'Static', 'Direct', 'NodeMesh', 'BGPPeer']).optional(),
          peerIP: z.string().optional(),
        })
        .optional(),
    ),
  });

/**
 * What calico-node reports. Every part is a Go struct value without `omitempty`, so a status is
 * stored whole: zero counters, `{}` for an agent not seen, `null` for a time never set.
 */
export const calicoNodeStatusStatusSchema = lazySchema(() =>
  z.strictObject({
    lastUpdated: goAlways(goField(z.string().nullable(), { value: 'time' }).optional()),
    agent: goAlways(
      z
        .strictObject({
          birdV4: goAlways(daemonStatus().optional()),
          birdV6: goAlways(daemonStatus().optional()),
        })
        .optional(),
    ),
    bgp: goAlways(
      z
        .strictObject({
          numberEstablishedV4: goAlways(z.number().int().optional()),
          numberNotEstablishedV4: goAlways(z.number().int().optional()),
          numberEstablishedV6: goAlways(z.number().int().optional()),
          numberNotEstablishedV6: goAlways(z.number().int().optional()),
          peersV4: z.array(peer()).optional(),
          peersV6: z.array(peer()).optional(),
        })
        .optional(),
    ),
    routes: goAlways(
      z
        .strictObject({ routesV4: z.array(route()).optional(), routesV6: z.array(route()).optional() })
        .optional(),
    ),
  }),
);
export type CalicoNodeStatusStatus = z.infer<typeof calicoNodeStatusStatusSchema>;
export type CalicoNodeStatus = ResourceObject<'CalicoNodeStatus', CalicoNodeStatusSpec> & {
  status?: CalicoNodeStatusStatus;
};

/** Upstream's validator: a node, the classes (each once) and a period are all required. */
export function checkCalicoNodeStatus(spec: unknown, ctx: CheckContext): void {
  const s = asObj(spec);
  if (!s) return;
  if (typeof s.node !== 'string' || s.node === '') ctx.add('spec.node', 'must name the node that reports');
  if (s.classes === undefined)
    ctx.add('spec.classes', `is required: any of ${NODE_STATUS_CLASSES.join(', ')}`);
  const seen = new Set<unknown>();
  (Array.isArray(s.classes) ? s.classes : []).forEach((c, i) => {
    if (seen.has(c)) ctx.add(`spec.classes[${i}]`, `lists ${String(c)} more than once`);
    seen.add(c);
  });
  if (s.updatePeriodSeconds === undefined) {
    ctx.add(
      'spec.updatePeriodSeconds',
      `is required: seconds between reports, 0 (never) to ${MAX_UPDATE_PERIOD_SECONDS}`,
    );
  }
}
