/**
 * Which built plugin the tests run: the Node bundle (bin/calico.mjs, with bin/calico and
 * bin/calico-ipam linked to it) by default, or the native executable (bin/native/calico, with
 * bin/native/calico-ipam) with CALICO_TEST_EXECUTABLE=native; and either way, with
 * CALICO_TEST_SERVICE=1, through a plugin service on each node (`calico --serve`). `buildPlugins` builds it fresh, as
 * `pnpm build` does; the native one from a split bundle in a temp dir, so test files building at the
 * same time never read a half-written file.
 */
import { join } from 'node:path';
// @ts-expect-error: a plain .mjs build script without type declarations
import { bundle, native } from '../scripts/bundle.mjs';

const NATIVE = process.env.CALICO_TEST_EXECUTABLE === 'native';
/** With CALICO_TEST_SERVICE=1 each node runs a plugin service the executables hand their work to. */
export const VIA_SERVICE = process.env.CALICO_TEST_SERVICE === '1';
/**
 * Which of the variants a test file runs, for its title: the variants share their tests, so a
 * report that names only the test would not say which executable failed.
 */
export const VARIANT = `${NATIVE ? 'native executable' : 'node bundle'}${VIA_SERVICE ? ', via the plugin service' : ''}`;
const bin = join(import.meta.dirname, '..', 'bin');

/** The directory holding `calico` and `calico-ipam`, for CNI_PATH. */
export const pluginDir = NATIVE ? join(bin, 'native') : bin;
/** The one file both names lead to. */
export const pluginFile = join(pluginDir, NATIVE ? 'calico' : 'calico.mjs');

export async function buildPlugins(): Promise<void> {
  if (!NATIVE) {
    await bundle(bin);
    return;
  }
  await native(pluginDir);
}
