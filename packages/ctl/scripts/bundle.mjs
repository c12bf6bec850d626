// Bundles src/main.ts into one ESM file, bin/calicoctl, with a node shebang, and compiles that into a
// native executable, bin/native/calicoctl (bun build --compile), which starts much faster. Sibling
// packages are bundled from their TypeScript sources (`source` export condition), so nothing else
// needs building first. The git revision, when there is one, is what `calicoctl version` shows as
// "Git commit".
import { execFileSync } from 'node:child_process';
import { chmod, copyFile, mkdir, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function gitRevision() {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

/**
 * calicoctl talks to etcd through node:http2 (`createKVStore(cfg, { transport: 'http2' })`), so
 * etcd3, grpc-js and protobufjs (half the bundle, and most of its start-up) are left out: the
 * datastore's etcd3 store and its error classifier are replaced by stubs that say so if anything
 * ever reaches them.
 */
function withoutEtcd3() {
  const stubs = {
    'etcd-kv-store.js':
      "export class EtcdKVStore { constructor() { throw new Error('calicoctl carries no etcd3 client; it uses the http2 transport'); } }",
    'etcd-errors.js':
      "export function classifyEtcdError() { throw new Error('calicoctl carries no etcd3 client; it uses the http2 transport'); }",
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
  // bun tells an ES module by its file name, and bin/calicoctl has no extension.
  const entry = `${tmp}.mjs`;
  await copyFile(bundleFile, entry);
  try {
    execFileSync(
      bunBinary(),
      ['build', '--compile', '--minify', '--bytecode', '--format=esm', entry, '--outfile', tmp],
      { stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 1 << 26 },
    );
  } catch (e) {
    await rm(tmp, { force: true });
    throw new Error(
      `bun build --compile ${bundleFile} failed: ${String(e.stderr ?? e.message).slice(-2000)}`,
    );
  } finally {
    await rm(entry, { force: true });
  }
  await rename(tmp, outfile);
  return outfile;
}

export async function bundle(outDir = join(root, 'bin')) {
  await mkdir(outDir, { recursive: true });
  const outfile = join(outDir, 'calicoctl');
  await build({
    entryPoints: [join(root, 'src/main.ts')],
    outfile,
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
    define: { __CALICOCTL_GIT_REVISION__: JSON.stringify(gitRevision()) },
    banner: {
      // CommonJS dependencies call require(); give the ESM bundle one.
      js: "#!/usr/bin/env node\nimport { createRequire as __cr } from 'node:module';const require = __cr(import.meta.url);const __dirname = import.meta.dirname;",
    },
  });
  await chmod(outfile, 0o755);
  return outfile;
}

/** bin/calicoctl (bundling it first unless given) compiled into `outDir`/calicoctl. */
export async function native(outDir = join(root, 'bin', 'native'), bundleFile = undefined) {
  return compileNative(bundleFile ?? (await bundle()), join(outDir, 'calicoctl'));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = await bundle(process.argv[2]);
  process.stdout.write(`bundled ${out}\n`);
  const exe = await native(process.argv[2] && join(process.argv[2], 'native'), out);
  process.stdout.write(`compiled ${exe}\n`);
}
