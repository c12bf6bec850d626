/**
 * PATCH bodies (pure), applied with calicoctl's own patch functions:
 *
 *   application/json-patch+json            RFC 6902 operations (`jsonPatch`)
 *   application/merge-patch+json           RFC 7386 (`mergePatch`)
 *   application/strategic-merge-patch+json as upstream serves it for Calico's types, which declare
 *                                          no merge keys: a merge patch, with the `$patch`
 *                                          directives honoured (`mergePatch`, as `calicoctl patch`)
 *   application/apply-patch+yaml           server-side apply: refused (415), naming what to use
 */
import { jsonPatch, mergePatch } from '@calico-ts/ctl';
import { ApiServerError } from './errors.js';

export type PatchType = 'json' | 'merge' | 'strategic';

const TYPES: Record<string, PatchType> = {
  'application/json-patch+json': 'json',
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
};

/** The patch type of a Content-Type; throws `unsupported-media-type` for any other. */
export function patchTypeOf(contentType: string | undefined): PatchType {
  const t = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const type = TYPES[t];
  if (type) return type;
  if (t === 'application/apply-patch+yaml' || t === 'application/apply-patch+cbor') {
    throw new ApiServerError(
      'unsupported-media-type',
      'server-side apply is not supported by calico-apiserver: use client-side `kubectl apply` (without --server-side), `kubectl replace`, or a merge or JSON patch (`kubectl patch --type=merge|json`)',
    );
  }
  throw new ApiServerError(
    'unsupported-media-type',
    `the body of the request was in an unknown format (${t || 'no Content-Type'}) - accepted media types include: ${Object.keys(TYPES).join(', ')}`,
  );
}

/** `target` with the patch `text` applied; throws `bad-request` or `invalid` naming what failed. */
export function applyPatch(
  type: PatchType,
  target: Record<string, unknown>,
  text: string,
): Record<string, unknown> {
  let patch: unknown;
  try {
    patch = JSON.parse(text);
  } catch (e) {
    throw new ApiServerError('bad-request', `the patch is not JSON: ${(e as Error).message}`);
  }
  if (type !== 'json' && (patch === null || typeof patch !== 'object' || Array.isArray(patch))) {
    throw new ApiServerError('bad-request', `a ${type} patch must be a JSON object`);
  }
  if (type === 'json' && !Array.isArray(patch)) {
    throw new ApiServerError('bad-request', 'a JSON patch must be a list of operations');
  }
  let out: unknown;
  try {
    out = type === 'json' ? jsonPatch(target, patch) : mergePatch(target, patch);
  } catch (e) {
    throw new ApiServerError('invalid', `the patch cannot be applied: ${(e as Error).message}`);
  }
  if (out === null || typeof out !== 'object' || Array.isArray(out)) {
    throw new ApiServerError('invalid', 'the patch does not leave an object');
  }
  return out as Record<string, unknown>;
}
