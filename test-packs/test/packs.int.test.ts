/**
 * The publishable packages as an npm user gets them.
 *
 *   packages/<name> ──pnpm pack──► <tmp>/packs/*.tgz ──npm install──► <tmp>/project (outside the
 *                                                                      workspace, no pnpm links)
 *                                                                           │
 *        README.md: every ```js example block ──► <tmp>/project/examples/*.mjs ──node──► exit 0,
 *                                                                 stdout == the next fenced block
 *                                                                 when it is ```text output
 *        publint on each installed package: no errors, no warnings
 *        arethetypeswrong on each tarball: every `exports` entry resolves to its types, for Node's
 *        ESM resolution (node16/nodenext) and for bundlers
 *
 * Each example runs on the Node that runs the tests (the oldest supported, 20) and on the newest
 * Node LTS the npm registry serves (test-packs/NODE_LTS, fetched by scripts/setup.sh).
 *
 * An example block's info string may add what it needs: `root` (network namespaces, libnftables)
 * or `etcd` (the test starts a private etcd per Node version and passes it as DATASTORE_TYPE /
 * ETCD_ENDPOINTS). Such examples are declared only where that is available, and always under
 * CI=true, where a missing prerequisite must fail rather than skip.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { checkPackage, createPackageFromTarballData } from '@arethetypeswrong/core';
import { problemAffectsResolutionKind } from '@arethetypeswrong/core/problems';
import { type EtcdServer, etcdAvailable, startEtcd } from '@calico-ts/datastore/testing';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const ci = process.env.CI === 'true';
const isRoot = process.getuid?.() === 0;

/** The newest Node LTS, as scripts/setup.sh caches it. */
const ltsVersion = readFileSync(join(import.meta.dirname, '..', 'NODE_LTS'), 'utf8').trim();
const ltsNode = `/var/cache/calico-ts/node/${ltsVersion}/bin/node`;
const nodes = [
  { label: `Node ${process.version}`, bin: process.execPath },
  { label: `Node v${ltsVersion}`, bin: ltsNode },
];

interface Publishable {
  dir: string;
  name: string;
  version: string;
  readme: string | undefined;
}

/** Every package under packages/ that is not private: what would be published. */
const publishable: Publishable[] = readdirSync(join(root, 'packages'))
  .map((d) => join(root, 'packages', d))
  .filter((dir) => existsSync(join(dir, 'package.json')))
  .map((dir) => {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const readmePath = join(dir, 'README.md');
    return {
      dir,
      name: pkg.name as string,
      version: pkg.version as string,
      private: pkg.private === true,
      readme: existsSync(readmePath) ? readFileSync(readmePath, 'utf8') : undefined,
    };
  })
  .filter((p) => !p.private);

interface Example {
  line: number;
  code: string;
  needs: ('root' | 'etcd')[];
  output: string | undefined;
}

/**
 * The ```js example blocks of a README, each with the ```text output block that follows it (the
 * next fenced block, prose allowed between), if there is one.
 */
export function readmeExamples(text: string): Example[] {
  const out: Example[] = [];
  const fence = /^```js example([^\n]*)\n([\s\S]*?)^```[ \t]*$/gm;
  for (let m = fence.exec(text); m; m = fence.exec(text)) {
    const words = m[1]!.trim().split(/\s+/).filter(Boolean);
    const unknown = words.filter((w) => w !== 'root' && w !== 'etcd');
    if (unknown.length) throw new Error(`unknown example requirement ${unknown.join(' ')}`);
    // The next fenced block, if it is a ```text output one, is what the example prints.
    const next = /^```([^\n]*)\n([\s\S]*?)^```[ \t]*$/m.exec(text.slice(fence.lastIndex));
    out.push({
      line: text.slice(0, m.index).split('\n').length,
      code: m[2]!,
      needs: words as Example['needs'],
      output: next && next[1]!.trim() === 'text output' ? next[2] : undefined,
    });
  }
  return out;
}

/** Lines without trailing blanks, and no trailing empty lines: what a README can show faithfully. */
function normalize(text: string): string {
  return text
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')
    .trimEnd();
}

/** The environment of a child: ours, without what pnpm and vitest set for their own children. */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(npm_|pnpm_|VITEST|NODE_OPTIONS$|NODE_ENV$)/i.test(k)) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

function available(needs: Example['needs']): boolean {
  if (ci) return true;
  return needs.every((n) => (n === 'root' ? isRoot : etcdAvailable()));
}

let work: string;
let project: string;
const tarballs = new Map<string, string>();
/** One private etcd per Node version, so the same example on two Nodes never shares one. */
const etcds = new Map<number, Promise<EtcdServer>>();

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'calico-ts-packs-'));
  const packs = join(work, 'packs');
  project = join(work, 'project');
  await mkdir(packs);
  await mkdir(join(project, 'examples'), { recursive: true });
  // Each package packed once, all at the same time.
  await Promise.all(
    publishable.map(async (p) => {
      const { stdout } = await run('pnpm', ['pack', '--pack-destination', packs], {
        cwd: p.dir,
        env: childEnv(),
      });
      const file = stdout.trim().split('\n').at(-1)!.trim();
      if (!file.endsWith('.tgz') || !existsSync(file)) throw new Error(`pnpm pack of ${p.name}: ${stdout}`);
      tarballs.set(p.name, file);
    }),
  );
  // Dependencies between our packages resolve to the tarballs, never to the registry.
  const deps = Object.fromEntries([...tarballs].map(([name, file]) => [name, `file:${file}`]));
  await writeFile(
    join(project, 'package.json'),
    JSON.stringify({ name: 'scratch', private: true, type: 'module', dependencies: deps, overrides: deps }),
  );
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], {
    cwd: project,
    env: childEnv(),
    maxBuffer: 16 * 1024 * 1024,
  });
}, 300_000);

afterAll(async () => {
  await Promise.all([...etcds.values()].map(async (e) => (await e.catch(() => undefined))?.stop()));
  if (work) await rm(work, { recursive: true, force: true });
});

const installed = (name: string) => join(project, 'node_modules', ...name.split('/'));

test('there are publishable packages', () => {
  expect(publishable.map((p) => p.name)).toContain('@calico-ts/api');
});

test(`Node ${ltsVersion} is there and is an LTS release`, async () => {
  if (!existsSync(ltsNode)) throw new Error(`no ${ltsNode}: run scripts/setup.sh`);
  const { stdout } = await run(ltsNode, ['-p', 'process.version + " " + process.release.lts']);
  const [version, lts] = stdout.trim().split(' ');
  expect(version).toBe(`v${ltsVersion}`);
  expect(lts).not.toBe('undefined');
});

describe.each(publishable.map((p) => [p.name, p] as const))('%s', (name, p) => {
  test('has a README with a runnable example, shipped in the package', async () => {
    expect(p.readme, `${p.dir}/README.md`).toBeDefined();
    expect(readmeExamples(p.readme!).length).toBeGreaterThan(0);
    expect(await readFile(join(installed(name), 'README.md'), 'utf8')).toBe(p.readme);
  });

  test('installs with its workspace dependencies rewritten to versions', async () => {
    const pkg = JSON.parse(await readFile(join(installed(name), 'package.json'), 'utf8'));
    expect(pkg.version).toBe(p.version);
    for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies']) {
      for (const [dep, spec] of Object.entries<string>(pkg[field] ?? {})) {
        expect(spec, `${field}.${dep}`).not.toMatch(/^(workspace|catalog):/);
      }
    }
  });

  test('publint finds nothing', async () => {
    const pkgDir = installed(name);
    const { messages, pkg } = await publint({ pkgDir, pack: false, level: 'warning' });
    expect(messages.map((m) => `${m.type}: ${formatMessage(m, pkg) ?? m.code}`)).toEqual([]);
  });

  // The packages are ESM only (engines: Node >= 20.19, which can also require() them), so only the
  // ESM resolutions count: `node10` has no `exports` and `node16-cjs` cannot see ESM types, by design
  // (the "esm-only" profile of @arethetypeswrong/cli).
  test('arethetypeswrong finds nothing for ESM consumers', async () => {
    const pkg = JSON.parse(await readFile(join(p.dir, 'package.json'), 'utf8'));
    const tarball = new Uint8Array(await readFile(tarballs.get(name)!));
    const result = await checkPackage(createPackageFromTarballData(tarball));
    if (result.types === false) throw new Error(`${name} ships no types`);
    expect(Object.keys(result.entrypoints).sort()).toEqual(Object.keys(pkg.exports).sort());
    const problems = result.problems.filter((problem) =>
      (['node16-esm', 'bundler'] as const).some((kind) =>
        problemAffectsResolutionKind(problem, kind, result),
      ),
    );
    expect(problems).toEqual([]);
  });

  const examples = p.readme ? readmeExamples(p.readme) : [];
  for (const [i, ex] of examples.entries()) {
    if (!available(ex.needs)) continue;
    const needs = ex.needs.length ? ` (${ex.needs.join(', ')})` : '';
    for (const [j, node] of nodes.entries()) {
      // Examples are independent programs: they run side by side.
      test.concurrent(`README example at line ${ex.line}${needs} on ${node.label}`, async () => {
        const extra: Record<string, string> = {};
        if (ex.needs.includes('etcd')) {
          if (!etcds.has(j)) etcds.set(j, startEtcd());
          extra.DATASTORE_TYPE = 'etcdv3';
          extra.ETCD_ENDPOINTS = (await etcds.get(j)!).clientUrl;
        }
        const file = join(project, 'examples', `${name.replace(/[@/]/g, '_')}-${i}-${j}.mjs`);
        await writeFile(file, ex.code);
        const result = await run(node.bin, [file], {
          cwd: project,
          env: childEnv(extra),
          timeout: 60_000,
        }).catch((e: { code?: number; stdout?: string; stderr?: string }) => {
          throw new Error(`exit ${e.code}\n--- stdout\n${e.stdout}\n--- stderr\n${e.stderr}`);
        });
        if (ex.output !== undefined) expect(normalize(result.stdout)).toBe(normalize(ex.output));
      }, 90_000);
    }
  }
});
