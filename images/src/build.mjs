// Builds the container images with buildah, without Docker or a registry:
//
//   node images/src/build.mjs base               calico-ts/base (the root filesystem + Node.js)
//   node images/src/build.mjs node|cni|kube-controllers|ctl
//
// `pnpm images` runs these as turbo tasks: base first, then the four in parallel. Each image is
// left in the local container storage (`podman images`) and as an OCI archive in images/out/,
// and its size is printed.
//
// The root filesystem is made once with debootstrap (minbase plus the packages in definitions.mjs)
// and cached in /var/cache/calico-ts/rootfs, keyed by what went into it; the base image is rebuilt
// only when that key or the Node.js runtime changes.
//
// Builds of the same image take turns (a lock file per image in /var/cache/calico-ts): two test
// files, or a test and `pnpm images`, may ask for the same image at once, and two builds must not
// replace one image and its archive under each other.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildah, imageExists, imageLayers, imageSize, mib, run } from './buildah.mjs';
import {
  archivePath,
  BASE,
  IMAGES,
  imageRef,
  REPOSITORY,
  ROOT,
  VERSION,
  WORKLOAD_IMAGES,
} from './definitions.mjs';

const ROOTFS_CACHE = '/var/cache/calico-ts/rootfs';

function say(name, msg) {
  process.stdout.write(`images ${name}: ${msg}\n`);
}

function rootfsKey() {
  const h = createHash('sha256').update(JSON.stringify([BASE.suite, BASE.mirror, [...BASE.packages].sort()]));
  return `${BASE.suite}-minbase-${h.digest('hex').slice(0, 12)}`;
}

/** The cached root filesystem tarball, made with debootstrap when missing. */
async function rootfsTarball() {
  const tarball = join(ROOTFS_CACHE, `${rootfsKey()}.tar`);
  if (existsSync(tarball)) return tarball;
  await mkdir(ROOTFS_CACHE, { recursive: true });
  const dir = await mkdtemp(join(ROOTFS_CACHE, 'debootstrap-'));
  try {
    say(
      'base',
      `debootstrap ${BASE.suite} (minbase + ${BASE.packages.join(', ')}) from ${BASE.mirror}; once, a few minutes`,
    );
    await run(
      'debootstrap',
      ['--variant=minbase', `--include=${BASE.packages.join(',')}`, BASE.suite, dir, BASE.mirror],
      {
        timeoutMs: 30 * 60_000,
      },
    );
    // What no program here reads: package lists and caches, documentation, manuals, locales.
    await run('sh', [
      '-c',
      'cd "$1" && rm -rf var/lib/apt/lists/* var/cache/apt/* var/cache/debconf/*-old var/log/* usr/share/doc/* usr/share/man/* usr/share/info/* usr/share/locale/* usr/share/lintian',
      'trim',
      dir,
    ]);
    const tmp = `${tarball}.partial`;
    await run('tar', ['--numeric-owner', '-C', dir, '-cf', tmp, '.']);
    await rename(tmp, tarball);
    return tarball;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const BASE_KEY_LABEL = 'org.calico-ts.base-key';

async function buildBase() {
  const ref = imageRef('base');
  const tarball = await rootfsTarball();
  const key = `${rootfsKey()}+node-${process.version}`;
  if (await imageExists(ref)) {
    const have = (
      await buildah(
        'inspect',
        '--type',
        'image',
        '--format',
        `{{index .ImageAnnotations "${BASE_KEY_LABEL}"}}`,
        ref,
      )
    ).trim();
    const label = (
      await buildah(
        'inspect',
        '--type',
        'image',
        '--format',
        `{{index .OCIv1.Config.Labels "${BASE_KEY_LABEL}"}}`,
        ref,
      )
    ).trim();
    if (have === key || label === key) {
      say('base', `${ref} is current (${key})`);
      return ref;
    }
  }
  say('base', `building ${ref} from ${tarball} and Node.js ${process.version}`);
  const ctr = (await buildah('from', '--quiet', 'scratch')).trim();
  try {
    await buildah('add', ctr, tarball, '/');
    // One runtime for every program of every image.
    await buildah('copy', '--chmod', '0755', ctr, process.execPath, '/usr/local/bin/node');
    await buildah(
      'config',
      '--env',
      'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      '--label',
      `${BASE_KEY_LABEL}=${key}`,
      '--label',
      `org.opencontainers.image.version=${VERSION}`,
      ctr,
    );
    await buildah('commit', '--quiet', '--rm', ctr, ref);
  } catch (e) {
    await buildah('rm', ctr).catch(() => {});
    throw e;
  }
  say('base', `${ref} ${mib(await imageSize(ref))}`);
  return ref;
}

/**
 * A program bundled here from an app whose build makes no bundle of its own (kube-controllers):
 * an entry that runs the app's `main(argv, env)` (`main(env)` with `call: 'env'`) as its bin
 * script does, from the TypeScript sources.
 */
async function bundleProgram(b, outDir) {
  const { build } = await import('esbuild');
  const { bundleExecutable } = await import(pathToFileURL(join(ROOT, 'scripts/bundle-lib.mjs')).href);
  const root = join(ROOT, b.app);
  const entry = join(outDir, 'entry.mjs');
  await writeFile(
    entry,
    `import { main } from ${JSON.stringify(join(root, 'src/main.ts'))};\n` +
      (b.call === 'env'
        ? 'process.exitCode = await main(process.env);\n'
        : 'process.exitCode = await main(process.argv.slice(2), process.env);\n'),
  );
  const outfile = join(outDir, b.to.split('/').pop());
  await bundleExecutable(build, {
    root,
    entry,
    outfile,
    ...(b.etcd3 ? { etcd3From: join(ROOT, 'packages/datastore') } : {}),
  });
  return outfile;
}

/** The image's config (entrypoint, command, env, the OCI labels every image carries), then the commit. */
async function configureAndCommit(ctr, name, ref, { entrypoint, cmd, env = [] }) {
  await buildah(
    'config',
    '--entrypoint',
    JSON.stringify(entrypoint),
    '--cmd',
    cmd,
    ...env.flatMap((e) => ['--env', e]),
    '--label',
    `org.opencontainers.image.title=${REPOSITORY}/${name}`,
    '--label',
    `org.opencontainers.image.description=${IMAGES[name]?.description ?? WORKLOAD_IMAGES[name].description}`,
    '--label',
    `org.opencontainers.image.version=${VERSION}`,
    ctr,
  );
  await buildah('commit', '--quiet', '--rm', ctr, ref);
}

/** The image as an OCI archive in images/out/ (replacing an older one); resolves to its path. */
async function writeArchive(name, ref) {
  const archive = archivePath(name);
  await mkdir(dirname(archive), { recursive: true });
  await rm(archive, { force: true });
  await buildah('push', '--quiet', ref, `oci-archive:${archive}:${ref}`);
  return archive;
}

async function buildApp(name) {
  const def = IMAGES[name];
  if (!def) throw new Error(`no image "${name}" (images: base, ${Object.keys(IMAGES).join(', ')})`);
  const missing = def.needs.filter((p) => !existsSync(join(ROOT, p)));
  if (missing.length > 0) throw new Error(`image ${name} needs ${missing.join(', ')}: run pnpm build first`);
  const ref = imageRef(name);
  const base = imageRef('base');
  if (!(await imageExists(base)))
    throw new Error(`${base} is missing: build it first (node images/src/build.mjs base)`);
  const work = await mkdtemp(join(tmpdir(), `calico-ts-image-${name}-`));
  const ctr = (await buildah('from', '--quiet', '--pull-never', base)).trim();
  try {
    say(name, `building ${ref}`);
    const dirs = [
      ...new Set([
        ...(def.dirs ?? []),
        ...[...(def.files ?? []), ...(def.bundle ?? [])].map((f) => dirname(f.to)),
        ...(def.links ?? []).map((l) => dirname(l.path)),
      ]),
    ];
    if (dirs.length > 0) await buildah('run', '--network', 'none', ctr, '--', 'mkdir', '-p', ...dirs);
    for (const f of def.files ?? []) {
      const from = isAbsolute(f.from) ? f.from : join(ROOT, f.from);
      if (!existsSync(from)) throw new Error(`image ${name}: ${from} not found`);
      // A directory's contents go into `to`; symlinks in the source are followed (pnpm's store).
      await run('sh', [
        '-c',
        'buildah copy "$1" "$(readlink -f "$2")" "$3" >/dev/null',
        'copy',
        ctr,
        from,
        f.to,
      ]);
    }
    for (const b of def.bundle ?? []) {
      say(name, `bundling ${b.app}`);
      await buildah('copy', '--chmod', '0755', ctr, await bundleProgram(b, work), b.to);
    }
    for (const l of def.links ?? [])
      await buildah('run', '--network', 'none', ctr, '--', 'ln', '-sfn', l.target, l.path);
    await configureAndCommit(ctr, name, ref, { entrypoint: def.entrypoint, cmd: '' });
  } catch (e) {
    await buildah('rm', ctr).catch(() => {});
    throw e;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const archive = await writeArchive(name, ref);
  const [size, layers, baseSize] = await Promise.all([imageSize(ref), imageLayers(ref), imageSize(base)]);
  say(
    name,
    `${ref} ${mib(size)} (${layers.length} layers; ${mib(size - baseSize)} over the shared base), archive ${archive}`,
  );
  return ref;
}

/** Debian's statically linked busybox (package busybox-static), the one program of the workload images. */
const BUSYBOX = '/bin/busybox';

/**
 * A dynamically linked program of the machine into `tree` at the same path, with every shared
 * library `ldd` resolves for it (and the loader), so it runs in a scratch image.
 */
async function copyWithLibraries(program, tree) {
  if (!existsSync(program))
    throw new Error(`${program} is missing (its Debian package is in scripts/setup.sh; run it)`);
  const out = await run('ldd', [program]);
  const libs = [...out.matchAll(/(\/\S+) \(0x/g)].map((m) => m[1]).filter((p) => !p.includes('vdso'));
  for (const f of [program, ...new Set(libs)]) {
    const to = join(tree, f);
    await mkdir(dirname(to), { recursive: true });
    // Through symlinks: the library's file under the name the program asks for.
    await run('cp', ['-L', f, to]);
  }
}

/**
 * A workload image (definitions.mjs WORKLOAD_IMAGES) from scratch: busybox, its applets as links,
 * a /www for httpd, the command. Rebuilt each time: it takes about a second.
 */
async function buildWorkload(name) {
  const def = WORKLOAD_IMAGES[name];
  const ref = imageRef(name);
  const out = await run('sh', ['-c', `${BUSYBOX} --help 2>&1 | head -n1 || true`]);
  if (!existsSync(BUSYBOX) || !out.includes('BusyBox'))
    throw new Error(`image ${name} needs ${BUSYBOX} (Debian package busybox-static; run scripts/setup.sh)`);
  const ctr = (await buildah('from', '--quiet', 'scratch')).trim();
  try {
    say(name, `building ${ref} from ${BUSYBOX}`);
    const work = await mkdtemp(join(tmpdir(), `calico-ts-image-${name}-`));
    try {
      // The tree is made here and added whole: scratch has no shell to make it with.
      await run('sh', [
        '-c',
        'set -e; cd "$1"; shift; mkdir -p bin www tmp etc; chmod 1777 tmp; cp /bin/busybox bin/busybox; ' +
          'for a in "$@"; do ln -s busybox "bin/$a"; done; ' +
          'echo "root:x:0:0:root:/:/bin/sh" > etc/passwd; echo "root:x:0:" > etc/group',
        'tree',
        work,
        ...def.applets,
      ]);
      for (const prog of def.programs ?? []) await copyWithLibraries(prog, work);
      await buildah('add', ctr, work, '/');
    } finally {
      await rm(work, { recursive: true, force: true });
    }
    await configureAndCommit(ctr, name, ref, {
      entrypoint: def.entry ?? [],
      cmd: JSON.stringify(def.cmd),
      env: ['PATH=/bin:/usr/bin'],
    });
  } catch (e) {
    await buildah('rm', ctr).catch(() => {});
    throw e;
  }
  const archive = await writeArchive(name, ref);
  say(name, `${ref} ${mib(await imageSize(ref))}, archive ${archive}`);
  return ref;
}

const targets = process.argv.slice(2);
const known = ['base', ...Object.keys(IMAGES), ...Object.keys(WORKLOAD_IMAGES)];
if (targets.length === 0 || targets.some((t) => !known.includes(t))) {
  process.stderr.write(`usage: node images/src/build.mjs ${known.join('|')} ...\n`);
  process.exit(2);
}
if (process.getuid?.() !== 0) {
  process.stderr.write(
    'images: building images needs root (buildah keeps them in /var/lib/containers/storage)\n',
  );
  process.exit(1);
}
/**
 * Holds `/var/cache/calico-ts/images-<name>.lock` (created exclusively, holding our PID) while `f`
 * runs; waits while another live process holds it, and takes over one whose holder is gone.
 */
async function withBuildLock(name, f) {
  const dir = '/var/cache/calico-ts';
  await mkdir(dir, { recursive: true });
  const path = join(dir, `images-${name}.lock`);
  let waited = false;
  for (;;) {
    try {
      const fd = openSync(path, 'wx', 0o644);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
    let holder = 0;
    try {
      holder = Number(readFileSync(path, 'utf8'));
    } catch {
      continue; // released meanwhile
    }
    let alive = holder > 0;
    if (alive) {
      try {
        process.kill(holder, 0);
      } catch (e) {
        alive = e.code !== 'ESRCH';
      }
    }
    if (!alive) {
      unlinkSync(path);
      continue;
    }
    if (!waited) say(name, `waiting for another build of it (PID ${holder})`);
    waited = true;
    await new Promise((r) => setTimeout(r, 500));
  }
  try {
    return await f();
  } finally {
    try {
      if (readFileSync(path, 'utf8') === String(process.pid)) unlinkSync(path);
    } catch {
      // already gone
    }
  }
}

for (const target of targets) {
  try {
    const t0 = Date.now();
    await withBuildLock(target, () =>
      target === 'base' ? buildBase() : target in WORKLOAD_IMAGES ? buildWorkload(target) : buildApp(target),
    );
    say(target, `done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  } catch (e) {
    process.stderr.write(`images ${target}: ${e.message}\n`);
    process.exit(1);
  }
}
