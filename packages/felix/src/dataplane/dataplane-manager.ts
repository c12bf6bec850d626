/**
 * DataplaneManager: the one shape every part of the Linux dataplane has (upstream
 * `felix/dataplane/linux/int_dataplane.go`: each manager's `OnUpdate(msg)` and
 * `CompleteDeferredWork()`).
 *
 *   LinuxDataplane.onUpdate(diff) ──► each manager's onUpdate(diff), in list order: record only
 *   LinuxDataplane.apply()        ──► each manager's completeDeferredWork(), in list order:
 *                                     program what the recorded updates need
 *
 * `onUpdate` takes every diff of the calculation graph and keeps what it needs of it; it never
 * touches the kernel and never throws for a diff the graph emits. `completeDeferredWork` moves
 * the kernel to what was recorded, and does nothing when nothing it owns changed (the workload
 * routes, which read the kernel back on every apply, are the exception). It rejects after doing
 * what it could when a step failed; what was not programmed is programmed by a later call.
 *
 * Thread-safety: the caller (LinuxDataplane) never runs two calls of one manager at once.
 */
import type { DataplaneDiff } from '../calc/types.js';

export interface DataplaneManager {
  /** Records one change of the desired dataplane state; no kernel work. */
  onUpdate(diff: DataplaneDiff): void;
  /** Programs what the recorded changes need; rejects when a step failed. */
  completeDeferredWork(): Promise<void>;
}
