// What every package's scripts/bundle.mjs shares: bundling a program into one ESM file that Node
// runs (esbuild, handed in by the caller from its own dependencies), the two fix-ups etcd3 needs
// inside a single file, leaving etcd3 out of programs that talk to etcd over node:http2, compiling
// a bundle into a native executable with bun, and writing each output atomically (a test or a
// runtime may be executing the old file while it is replaced).
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/** A sibling path for writing `file` under before renaming it into place. */
function tmpName(file) {
  return `${file}.${process.pid}-${Math.random().toString(16).slice(2, 8)}.tmp`;
}

/** The banner that gives an ESM bundle the `require`, `__dirname`, `__filename` CommonJS code uses. */
const NODE_BANNER =
  "#!/usr/bin/env node\nimport { createRequire as __cr } from 'node:module';const require = __cr(import.meta.url);const __dirname = import.meta.dirname;const __filename = import.meta.filename;";

/**
 * Bundle `root`/src/main.ts (or `root`/`entry`) into the executable `outfile` (ESM, node shebang,
 * mode 755). Sibling
 * packages come from their TypeScript sources (`source` export condition), so nothing else needs
 * building first. `build` is esbuild's.
 */
export async function bundleExecutable(build, options) {
  const { outfile } = options;
  await mkdir(dirname(outfile), { recursive: true });
  const tmp = tmpName(outfile);
  try {
    await esbuildProgram(build, options, { outfile: tmp });
    await chmod(tmp, 0o755);
    await rename(tmp, outfile);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  return outfile;
}

/**
 * As `bundleExecutable`, but split at dynamic imports: `outdir`/main.mjs plus the chunks it loads
 * on demand (esbuild `splitting`), for `compileNative`.
 */
async function bundleSplit(build, options) {
  const { outdir } = options;
  await rm(outdir, { recursive: true, force: true });
  await mkdir(outdir, { recursive: true });
  await esbuildProgram(build, options, {
    outdir,
    splitting: true,
    entryNames: 'main',
    outExtension: { '.js': '.mjs' },
  });
  return join(outdir, 'main.mjs');
}

async function esbuildProgram(
  build,
  { root, entry = 'src/main.ts', external = [], plugins = [], inject = [], define = {}, etcd3From },
  output,
) {
  // `etcd3From` (packages/datastore): the program carries etcd3, with the fix-ups of withEtcd3.
  const etcd3 = etcd3From === undefined ? undefined : await withEtcd3(etcd3From);
  try {
    await build({
      entryPoints: [resolve(root, entry)],
      ...output,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      conditions: ['source', 'import', 'default'],
      mainFields: ['module', 'main'],
      external,
      inject: [...inject, ...(etcd3?.inject ?? [])],
      minifyWhitespace: true,
      minifySyntax: true,
      legalComments: 'none',
      logLevel: 'warning',
      plugins: [...plugins, ...(etcd3?.plugins ?? [])],
      define,
      banner: { js: NODE_BANNER },
    });
  } finally {
    await etcd3?.cleanup();
  }
}

/**
 * For programs that talk to etcd through node:http2 (`createKVStore(cfg, { transport: 'http2' })`):
 * etcd3, grpc-js and protobufjs (half a bundle, and most of its start-up) are left out; the
 * datastore's etcd3 store and its error classifier become stubs that say so if ever reached.
 */
export function withoutEtcd3(program) {
  const message = `${program} carries no etcd3 client; it uses the http2 transport`;
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
 * For programs that carry etcd3 (the daemons; `bundleExecutable`'s `etcd3From`): the esbuild
 * `{ plugins, inject }` and a `cleanup`. `datastoreDir` is packages/datastore.
 *
 * - etcd3 loads its gRPC service definitions from `${__dirname}/../proto/rpc.proto` at start-up; a
 *   single file has no such directory. The .proto files are parsed here, at build time (keepCase,
 *   as etcd3 asks), and the load becomes proto-loader's `fromJSON` of the parsed definitions.
 * - protobufjs finds the `long` package with a runtime `require` that a bundler cannot see; without
 *   it, 64-bit fields (lease IDs, cluster IDs) are decoded through JS numbers and lose digits. A
 *   shim injected ahead of everything hands protobufjs the same `long` it would have loaded.
 */
async function withEtcd3(datastoreDir) {
  const etcd3Entry = createRequire(join(datastoreDir, 'package.json')).resolve('etcd3');
  const protoLoader = createRequire(etcd3Entry).resolve('@grpc/proto-loader');
  const protobufMain = createRequire(protoLoader).resolve('protobufjs');
  const protobuf = createRequire(protoLoader)('protobufjs');

  const protoDir = resolve(dirname(etcd3Entry), '../proto');
  const pb = new protobuf.Root();
  pb.resolvePath = (origin, target) => resolve(origin ? dirname(origin) : protoDir, target);
  pb.loadSync(join(protoDir, 'rpc.proto'), { keepCase: true });
  const definitions = JSON.stringify(pb.toJSON());
  // biome-ignore lint/suspicious/noTemplateCurlyInString: this is etcd3's source text, matched literally
  const call = '(0, proto_loader_1.loadSync)(`${__dirname}/../proto/rpc.proto`, {';
  const inlineProtos = {
    name: 'inline-etcd3-protos',
    setup(b) {
      b.onLoad({ filter: /etcd3[\\/]lib[\\/]connection-pool\.js$/ }, async (args) => {
        const source = await readFile(args.path, 'utf8');
        if (!source.includes(call)) throw new Error(`${args.path}: etcd3 changed how it loads rpc.proto`);
        return {
          contents: source.replace(call, `(0, proto_loader_1.fromJSON)(${definitions}, {`),
          loader: 'js',
        };
      });
    },
  };

  const longPath = createRequire(protobufMain).resolve('long');
  const dir = await mkdtemp(join(tmpdir(), 'calico-ts-bundle-'));
  const shim = join(dir, 'long-shim.mjs');
  await writeFile(
    shim,
    `import Long from ${JSON.stringify(longPath)};\nglobalThis.dcodeIO = Object.assign(globalThis.dcodeIO ?? {}, { Long });\n`,
  );
  return {
    plugins: [inlineProtos],
    inject: [shim],
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * The bun executable that the `bun` npm package (a dependency of the package at `root`) ships in
 * its platform package. (Its postinstall, which would link it as `bun`, does not run under pnpm;
 * the binary is there anyway.)
 */
function bunBinary(root) {
  const requireFromBun = createRequire(createRequire(join(root, 'package.json')).resolve('bun/package.json'));
  const arch = { x64: 'x64', arm64: 'aarch64' }[process.arch] ?? process.arch;
  return requireFromBun.resolve(`@oven/bun-${process.platform}-${arch}/bin/bun`);
}

/**
 * `root`/src/main.ts as a native single-file executable `outfile` (`bun build --compile`,
 * JavaScriptCore bytecode included): the same code, started in a fraction of Node's start-up time,
 * reading no .env or bunfig.toml from the working directory. It is bundled split at dynamic
 * imports (in a temporary directory) and the chunks stay separate inside the executable, loaded
 * when first imported: a run parses only the code it reaches. `options` as for `bundleExecutable`,
 * less `outfile`.
 */
export async function compileNative(build, options, outfile) {
  const work = await mkdtemp(join(tmpdir(), 'native-split-'));
  try {
    const entry = await bundleSplit(build, { ...options, outdir: work });
    await compileBundle(options.root, entry, outfile);
    return outfile;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function compileBundle(root, entry, outfile) {
  await mkdir(dirname(outfile), { recursive: true });
  const tmp = tmpName(outfile);
  try {
    execFileSync(
      bunBinary(root),
      [
        'build',
        '--compile',
        '--minify',
        '--bytecode',
        '--format=esm',
        // A program's environment is its caller's: never a .env or bunfig.toml that happens to be
        // in the working directory (bun's default for compiled programs).
        '--no-compile-autoload-dotenv',
        '--no-compile-autoload-bunfig',
        '--splitting',
        entry,
        '--outfile',
        tmp,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 1 << 26 },
    );
  } catch (e) {
    await rm(tmp, { force: true });
    throw new Error(`bun build --compile ${entry} failed: ${String(e.stderr ?? e.message).slice(-2000)}`);
  }
  await rename(tmp, outfile);
}

/** Point each of `names` in `dir` at `target`, atomically (a program may be running from there). */
export async function linkNames(dir, target, names) {
  for (const name of names) {
    const link = join(dir, name);
    const tmpLink = tmpName(link);
    await rm(tmpLink, { force: true });
    await symlink(target, tmpLink);
    await rename(tmpLink, link);
  }
}
