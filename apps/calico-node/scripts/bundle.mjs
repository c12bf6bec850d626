// Bundles src/main.ts into one ESM file, bin/calico-node, with a node shebang. Workspace packages are
// bundled from their TypeScript sources (`source` export condition), so nothing else needs building
// first. koffi (native) stays outside the bundle and is found from this package's node_modules.
// etcd3's protos are inlined and protobufjs is given `long`, as for calico-felix.
import { chmod, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * etcd3 loads its gRPC service definitions from `${__dirname}/../proto/rpc.proto` at start-up; a
 * single file has no such directory. So the .proto files are parsed here, at build time (keepCase,
 * as etcd3 asks), and the load becomes proto-loader's `fromJSON` of the parsed definitions.
 */
function inlineEtcdProtos() {
  const requireFromDatastore = createRequire(join(root, '../../packages/datastore/package.json'));
  const etcd3Entry = requireFromDatastore.resolve('etcd3');
  const protoDir = resolve(dirname(etcd3Entry), '../proto');
  const protoLoader = createRequire(etcd3Entry).resolve('@grpc/proto-loader');
  const protobuf = createRequire(protoLoader)('protobufjs');
  const rootProto = join(protoDir, 'rpc.proto');
  const pb = new protobuf.Root();
  pb.resolvePath = (origin, target) => resolve(origin ? dirname(origin) : protoDir, target);
  pb.loadSync(rootProto, { keepCase: true });
  const definitions = JSON.stringify(pb.toJSON());
  // biome-ignore lint/suspicious/noTemplateCurlyInString: this is etcd3's source text, matched literally
  const call = '(0, proto_loader_1.loadSync)(`${__dirname}/../proto/rpc.proto`, {';
  return {
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
}

/**
 * protobufjs finds the `long` package with a runtime `require` that a bundler cannot see; without
 * it, 64-bit fields (etcd lease IDs, cluster IDs) are decoded through JS numbers and lose digits.
 * This shim, injected ahead of everything, hands protobufjs the same `long` it would have loaded.
 */
async function longShim() {
  const etcd3Entry = createRequire(join(root, '../../packages/datastore/package.json')).resolve('etcd3');
  const protoLoader = createRequire(etcd3Entry).resolve('@grpc/proto-loader');
  const protobufMain = createRequire(protoLoader).resolve('protobufjs');
  const longPath = createRequire(protobufMain).resolve('long');
  const dir = await mkdtemp(join(tmpdir(), 'calico-node-bundle-'));
  const file = join(dir, 'long-shim.mjs');
  await writeFile(
    file,
    `import Long from ${JSON.stringify(longPath)};\nglobalThis.dcodeIO = Object.assign(globalThis.dcodeIO ?? {}, { Long });\n`,
  );
  return { file, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export async function bundle(outDir = join(root, 'bin')) {
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
  await mkdir(outDir, { recursive: true });
  const outfile = join(outDir, 'calico-node');
  // Written under a temporary name and renamed, so a running test never sees half a file.
  const tmp = `${outfile}.${process.pid}-${Math.random().toString(16).slice(2, 8)}.tmp`;
  const shim = await longShim();
  await build({
    inject: [shim.file],
    entryPoints: [join(root, 'src/main.ts')],
    outfile: tmp,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    conditions: ['source', 'import', 'default'],
    mainFields: ['module', 'main'],
    external: ['koffi'],
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'none',
    logLevel: 'warning',
    plugins: [inlineEtcdProtos()],
    define: { __CALICO_TS_VERSION__: JSON.stringify(`v${pkg.version}`) },
    banner: {
      // CommonJS dependencies (etcd3, gRPC, pino) call require(); give the ESM bundle one.
      js: "#!/usr/bin/env node\nimport { createRequire as __cr } from 'node:module';const require = __cr(import.meta.url);const __dirname = import.meta.dirname;const __filename = import.meta.filename;",
    },
  }).finally(() => shim.cleanup());
  await chmod(tmp, 0o755);
  await rename(tmp, outfile);
  return outfile;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = await bundle(process.argv[2]);
  process.stdout.write(`bundled ${out}\n`);
}
