/**
 * Felix as a program, for the lab tests: this app's own `calico-node -felix`, bundled by its own
 * build script (scripts/bundle.mjs, as `pnpm build` does) from the current sources, so a test never
 * runs a stale binary. calico-node is the one owner of Felix's process (signals, logs, the
 * datastore and libnftables it opens); `@calico-ts/felix` is a library without an executable. The
 * bundle lands in this app's bin/, where it finds koffi (native) in the app's node_modules.
 */

/** The arguments that make calico-node run Felix alone. */
export const FELIX_ARGS: readonly string[] = ['-felix'];

/** Bundles calico-node and returns the executable's path (run it with {@link FELIX_ARGS}). */
export async function bundleFelix(): Promise<string> {
  // @ts-expect-error: a plain .mjs build script without type declarations
  const { bundle } = await import('../../scripts/bundle.mjs');
  return (await bundle()) as string;
}
