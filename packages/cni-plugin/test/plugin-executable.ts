/**
 * Which built plugin the tests run: the Node bundle (calico.mjs, with calico and calico-ipam linked
 * to it) by default, or the native executable (native/calico, with native/calico-ipam) with
 * CALICO_TEST_EXECUTABLE=native; and either way, with CALICO_TEST_SERVICE=1, through a plugin
 * service on each node (`calico --serve`). `buildPlugins` builds it fresh from the sources, as
 * `pnpm build` does, into a directory of this test file's own (`removePlugins` deletes it): the
 * executable a test runs is never the one in the package's bin/, which other test files and
 * packages rebuild while this one runs.
 */
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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
const bin = join(tmpdir(), `calico-ts-cni-plugins-${process.pid}-${Math.random().toString(16).slice(2, 10)}`);

/** The directory holding `calico` and `calico-ipam`, for CNI_PATH. */
export const pluginDir = NATIVE ? join(bin, 'native') : bin;
/** The one file both names lead to. */
export const pluginFile = join(pluginDir, NATIVE ? 'calico' : 'calico.mjs');

export async function buildPlugins(): Promise<void> {
  await mkdir(bin, { recursive: true });
  if (!NATIVE) {
    await bundle(bin);
    return;
  }
  await native(pluginDir);
}

/** Delete what `buildPlugins` built. */
export async function removePlugins(): Promise<void> {
  await rm(bin, { recursive: true, force: true });
}
