/**
 * Felix as a program, for the lab tests: `calico-node -felix`, bundled from apps/calico-node.
 * calico-node's app is the one owner of Felix's process (signals, logs, the datastore and
 * libnftables it opens); this library has no executable of its own. The bundle lands in
 * apps/calico-node/bin, where it finds koffi (native) in that app's node_modules.
 */

/** The arguments that make calico-node run Felix alone. */
export const FELIX_ARGS: readonly string[] = ['-felix'];

/** Bundles calico-node and returns the executable's path (run it with {@link FELIX_ARGS}). */
export async function bundleFelix(): Promise<string> {
  // @ts-expect-error: a plain .mjs build script without type declarations
  const { bundle } = await import('../../../../apps/calico-node/scripts/bundle.mjs');
  return (await bundle()) as string;
}
