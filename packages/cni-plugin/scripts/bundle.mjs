// Bundles src/main.ts into one ESM file, bin/calico.mjs, with a node shebang, and links the two
// plugin names to it: bin/calico and bin/calico-ipam (the name picks the plugin). A runtime's
// CNI_PATH can point at bin/. Then compiles the bundle into a native executable that starts much
// faster (bun build --compile), bin/native/calico, with bin/native/calico-ipam linked to it: a
// CNI_PATH can point at bin/native/ instead. Sibling packages are bundled from their TypeScript sources (`source`
// export condition), so no other package needs building first.
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, readFile, rename, rm, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The plugin talks to etcd through node:http2 (`createKVStore(cfg, { transport: 'http2' })`), so
 * etcd3, grpc-js and protobufjs (half the bundle, and most of its start-up) are left out: the
 * datastore's etcd3 store and its error classifier are replaced by stubs that say so if anything
 * ever reaches them.
 */
function withoutEtcd3() {
  const message = 'the CNI plugin carries no etcd3 client; it uses the http2 transport';
  const stubs = {
    'etcd-kv-store.js': `export class EtcdKVStore { constructor() { throw new Error(${JSON.stringify(message)}); } }`,
    'etcd-errors.js': `export function classifyEtcdError() { throw new Error(${JSON.stringify(message)}); }`,
  };
  return {
    name: 'without-etcd3',
    setup(b) {
      b.onResolve({ filter: /^\.\/kv\/etcd-(kv-store|errors)\.js$/ }, (args) =>
        /[\\/]datastore[\\/]src[\\/]/.test(args.importer)
          ? { path: args.path.slice('./kv/'.length), namespace: 'without-etcd3' }
          : undefined,
      );
      b.onLoad({ filter: /.*/, namespace: 'without-etcd3' }, (args) => ({
        contents: stubs[args.path],
        loader: 'js',
      }));
    },
  };
}

/**
 * The bun executable that the `bun` npm package ships in its platform package. (The package's
 * postinstall, which would link it as `bun`, does not run under pnpm; the binary is there anyway.)
 */
function bunBinary() {
  const requireFromBun = createRequire(createRequire(join(root, 'package.json')).resolve('bun/package.json'));
  const arch = { x64: 'x64', arm64: 'aarch64' }[process.arch] ?? process.arch;
  return requireFromBun.resolve(`@oven/bun-${process.platform}-${arch}/bin/bun`);
}

/**
 * The bundle as a native single-file executable (`bun build --compile`, JavaScriptCore bytecode
 * included): same code, started in a fraction of Node's start-up time. Written under a temporary
 * name and renamed, like the bundle.
 */
async function compileNative(bundleFile, outfile) {
  await mkdir(dirname(outfile), { recursive: true });
  const tmp = `${outfile}.${process.pid}-${Math.random().toString(16).slice(2, 8)}.tmp`;
  try {
    execFileSync(
      bunBinary(),
      ['build', '--compile', '--minify', '--bytecode', '--format=esm', bundleFile, '--outfile', tmp],
      { stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 1 << 26 },
    );
  } catch (e) {
    await rm(tmp, { force: true });
    throw new Error(
      `bun build --compile ${bundleFile} failed: ${String(e.stderr ?? e.message).slice(-2000)}`,
    );
  }
  await rename(tmp, outfile);
  return outfile;
}

export async function bundle(outDir = join(root, 'bin')) {
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
  await mkdir(outDir, { recursive: true });
  const outfile = join(outDir, 'calico.mjs');
  // Written under a temporary name and renamed, so a plugin running from bin/ (or a test file
  // bundling at the same time) never sees half a file.
  const tmp = `${outfile}.${process.pid}-${Math.random().toString(16).slice(2, 8)}.tmp`;
  await build({
    entryPoints: [join(root, 'src/main.ts')],
    outfile: tmp,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    conditions: ['source', 'import', 'default'],
    mainFields: ['module', 'main'],
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'none',
    logLevel: 'warning',
    plugins: [withoutEtcd3()],
    define: { __CALICO_TS_VERSION__: JSON.stringify(`v${pkg.version}`) },
    banner: {
      // CommonJS dependencies call require(); give the ESM bundle one, and a __dirname for the
      // ones that name files beside them (only on paths the plugin never takes).
      js: "#!/usr/bin/env node\nimport { createRequire as __cr } from 'node:module';const require = __cr(import.meta.url);const __dirname = import.meta.dirname;",
    },
  });
  await chmod(tmp, 0o755);
  await rename(tmp, outfile);
  await linkNames(outDir, 'calico.mjs', ['calico', 'calico-ipam']);
  return outfile;
}

/**
 * bin/calico.mjs (bundling it first unless given) compiled into `outDir`/calico, with
 * `outDir`/calico-ipam a symlink to it: the native plugin executables, for a CNI_PATH.
 */
export async function native(outDir = join(root, 'bin', 'native'), bundleFile = undefined) {
  const exe = await compileNative(bundleFile ?? (await bundle()), join(outDir, 'calico'));
  await linkNames(outDir, 'calico', ['calico-ipam']);
  return exe;
}

/** Point each of `names` in `dir` at `target`, atomically (a plugin may be running from there). */
async function linkNames(dir, target, names) {
  for (const name of names) {
    const link = join(dir, name);
    const tmpLink = `${link}.${process.pid}-${Math.random().toString(16).slice(2, 8)}.tmp`;
    await rm(tmpLink, { force: true });
    await symlink(target, tmpLink);
    await rename(tmpLink, link);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = await bundle(process.argv[2]);
  process.stdout.write(`bundled ${out}\n`);
  const exe = await native(process.argv[2] && join(process.argv[2], 'native'), out);
  process.stdout.write(`compiled ${exe}\n`);
}
