/**
 * Kubernetes objects that cannot be turned into a valid Calico resource: reported once per
 * version (a structured warning naming the object, and the `kube_controllers_unconvertible_objects_total`
 * counter through `onSkipped`) and skipped, so one bad object never stops a controller or makes it
 * retry in a loop; the others are written. A new version of the object is judged again.
 */

import { validateResource } from '@calico-ts/api';
import type { Logger } from '@calico-ts/api/log';
import { isDatastoreError } from '@calico-ts/datastore';

export class UnconvertibleReporter {
  readonly #seen = new Map<string, string>();
  constructor(
    private readonly controller: string,
    private readonly log: Logger,
    private readonly onSkipped?: (name: string) => void,
  ) {}

  /** Report `name` (at `version`) as skipped, once per version. */
  skip(name: string, version: string, why: string): void {
    if (this.#seen.get(name) === version) return;
    this.#seen.set(name, version);
    this.log.warn(
      { controller: this.controller, object: name, err: why },
      'cannot convert the Kubernetes object into a valid Calico resource; skipped',
    );
    this.onSkipped?.(name);
  }

  /** Forget objects that are gone or converted since, so a later failure is reported again. */
  keepOnly(names: ReadonlySet<string>): void {
    for (const k of this.#seen.keys()) if (!names.has(k)) this.#seen.delete(k);
  }
}

const judged = new WeakMap<object, string | null>();

/**
 * Why `r` is not a valid Calico resource, or undefined when it is. Remembered per object: the
 * controllers replace an object when it changes, so each version is validated once, not once per pass.
 */
export function invalidReason(r: object): string | undefined {
  const known = judged.get(r);
  if (known !== undefined) return known ?? undefined;
  const v = validateResource(r);
  const why = v.ok ? null : v.errors.map((e) => `${e.path}: ${e.rule}`).join('; ');
  judged.set(r, why);
  return why ?? undefined;
}

/** A datastore refused the write because the resource is invalid (retrying cannot help). */
export function isInvalid(e: unknown): boolean {
  return isDatastoreError(e, 'invalid');
}
