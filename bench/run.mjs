// Run every benchmark (`bench/<area>/*.bench.mjs`) in turn, each in its own Node process, and
// print their tables. Benchmarks report ratios and never assert them: a slow machine is not a
// failure. Only a benchmark that crashes makes this exit non-zero.
//
//   node bench/run.mjs [filter]      e.g. `node bench/run.mjs datastore`
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const filter = process.argv[2];

const benches = [];
for (const area of readdirSync(here).sort()) {
  const dir = join(here, area);
  if (area === 'node_modules' || area === 'results' || !statSync(dir).isDirectory()) continue;
  for (const file of readdirSync(dir).sort()) {
    if (file.endsWith('.bench.mjs') && (!filter || join(area, file).includes(filter)))
      benches.push(join(dir, file));
  }
}

if (benches.length === 0) {
  console.log(`bench: nothing matches ${filter ?? '*/*.bench.mjs'}`);
  process.exit(0);
}

const crashed = [];
for (const file of benches) {
  const name = relative(here, file);
  console.log(`\n### ${name}\n`);
  const t0 = Date.now();
  const res = spawnSync(process.execPath, [file], { cwd: dirname(file), stdio: 'inherit' });
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  if (res.status !== 0) {
    crashed.push(name);
    console.log(`\nbench: ${name} crashed (exit ${res.status ?? res.signal}) after ${secs}s`);
  } else {
    console.log(`\nbench: ${name} done in ${secs}s`);
  }
}
console.log(`\nbench: ${benches.length - crashed.length} ran, ${crashed.length} crashed`);
process.exit(crashed.length > 0 ? 1 : 0);
