/**
 * The Calico release this calicoctl speaks for. The version-mismatch check compares it with
 * `ClusterInformation.default.spec.calicoVersion`.
 */
declare const __CALICOCTL_GIT_REVISION__: string | undefined;

export const CLIENT_VERSION = 'v3.32.1';

export function gitRevision(): string {
  return typeof __CALICOCTL_GIT_REVISION__ === 'string' ? __CALICOCTL_GIT_REVISION__ : 'unknown';
}
