/**
 * The image names the operator puts in calico-system, from the Installation's `registry`,
 * `imagePath` and `imagePrefix` as upstream composes them (pure):
 *
 *   <registry><imagePath>/<imagePrefix><name>:<version>
 *
 * with `imagePath` defaulting to this build's repository `calico-ts` and `registry` to none, so
 * the default names are the ones `pnpm images` tags (`calico-ts/node:v0.1.0`; a CRI resolves them
 * as `docker.io/calico-ts/node:v0.1.0`).
 */
import type { ResolvedInstallation } from './installation.js';

/** The version every image of this build is tagged with (images/src/definitions.mjs VERSION). */
export const VERSION = 'v0.1.0';
export const REPOSITORY = 'calico-ts';

export type ComponentImage = 'node' | 'cni' | 'kube-controllers' | 'typha' | 'apiserver';

export function componentImage(
  cfg: Pick<ResolvedInstallation, 'registry' | 'imagePath' | 'imagePrefix'>,
  name: ComponentImage,
): string {
  const path = (cfg.imagePath || REPOSITORY).replace(/^\/+|\/+$/g, '');
  return `${cfg.registry}${path}/${cfg.imagePrefix}${name}:${VERSION}`;
}
