/**
 * Which Kubernetes Secrets the BGP configuration reads passwords from: BGPPeer
 * `password.secretKeyRef` and the `default` BGPConfiguration's `nodeMeshPassword.secretKeyRef`.
 * Pure: the bridge asks its secret provider to follow exactly these, and renders the values it
 * gets back into `BgpInput.secrets` (keyed `<name>/<key>`, see `secretKey`).
 */
import type { BGPConfiguration, BGPPeer } from '@calico-ts/api';

export interface SecretRef {
  /** The Secret's name (in the namespace calico-node runs in). */
  readonly name: string;
  /** The key in its `data`. */
  readonly key: string;
}

/** `<name>/<key>`, the key of `BgpInput.secrets`. */
export function secretKey(ref: SecretRef): string {
  return `${ref.name}/${ref.key}`;
}

/** Every complete reference, deduplicated and sorted by name, then key. */
export function secretRefsOf(
  bgpConfigs: readonly BGPConfiguration[],
  peers: readonly BGPPeer[],
): SecretRef[] {
  const found = new Map<string, SecretRef>();
  const add = (ref: { name?: string; key?: string } | undefined) => {
    if (!ref?.name || !ref.key) return;
    const r = { name: ref.name, key: ref.key };
    found.set(secretKey(r), r);
  };
  for (const c of bgpConfigs) {
    if (c.metadata.name === 'default') add(c.spec?.nodeMeshPassword?.secretKeyRef);
  }
  for (const p of peers) add(p.spec?.password?.secretKeyRef);
  return [...found.values()].sort((a, b) =>
    a.name !== b.name ? (a.name < b.name ? -1 : 1) : a.key < b.key ? -1 : a.key > b.key ? 1 : 0,
  );
}
