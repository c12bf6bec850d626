/**
 * The container images the image-based scenarios run, built first when they are missing or older
 * than the build outputs they hold (`node images/src/build.mjs …`: the base once, then the rest in
 * parallel); the workload images (static busybox, about a second each) are built every time.
 */
import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  archivePath,
  IMAGES,
  type ImageName,
  imageRef,
  type WorkloadImageName,
} from '@calico-ts/images/definitions';
import { ROOT } from './lab-driver.js';

const BUILD = join(ROOT, 'images/src/build.mjs');

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

export function sh(cmd: string, args: readonly string[], timeoutMs = 120_000): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** When the image was made, or undefined when local storage does not have it. */
async function imageCreated(name: ImageName): Promise<number | undefined> {
  const r = await sh('podman', ['image', 'inspect', '--format', '{{.Created.Unix}}', imageRef(name)]);
  return r.code === 0 ? Number(r.stdout.trim()) * 1000 : undefined;
}

/** The images that are missing, or older than a build output they hold. */
async function staleImages(names: readonly ImageName[]): Promise<ImageName[]> {
  const stale: ImageName[] = [];
  for (const name of names) {
    const created = await imageCreated(name);
    const newest = Math.max(...IMAGES[name].needs.map((p) => statSync(join(ROOT, p)).mtimeMs));
    // The lab cluster imports the archive, so an image without one is stale too.
    if (created === undefined || created < newest || !existsSync(archivePath(name))) stale.push(name);
  }
  return stale;
}

async function build(names: readonly (ImageName | WorkloadImageName | 'base')[]): Promise<void> {
  const r = await sh(process.execPath, [BUILD, ...names], 25 * 60_000);
  if (r.code !== 0)
    throw new Error(`building the ${names.join(', ')} image failed:\n${r.stderr || r.stdout}`);
}

/** Builds what is stale of `names` (and every workload image asked for); says what it did. */
export async function ensureImages(
  names: readonly ImageName[] = Object.keys(IMAGES) as ImageName[],
  workloads: readonly WorkloadImageName[] = [],
): Promise<string> {
  const t0 = performance.now();
  const stale = await staleImages(names);
  if (stale.length > 0) {
    await build(['base']);
    await Promise.all(stale.map((n) => build([n])));
  }
  if (workloads.length > 0) await build(workloads);
  const s = ((performance.now() - t0) / 1000).toFixed(1);
  const built = [...stale, ...workloads];
  return built.length > 0
    ? `built the images ${built.join(', ')} in ${s} s`
    : `the images are current (${s} s)`;
}
