// Measures process start-up: `calico -v` (and VERSION) against `node -e 0`, interleaved so machine
// noise hits every command alike; prints median and minimum wall time of each. The native
// executable (bin/native/calico) is timed too when it is built. Not a test.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const runs = Number(process.argv[2] ?? 30);
const cases = [
  ['node -e 0', 'node', ['-e', '0'], {}],
  ['calico -v', join(root, 'bin/calico'), ['-v'], {}],
  ['calico VERSION', join(root, 'bin/calico'), [], { CNI_COMMAND: 'VERSION' }],
  ...(existsSync(join(root, 'bin/native/calico'))
    ? [
        ['native calico -v', join(root, 'bin/native/calico'), ['-v'], {}],
        ['native VERSION', join(root, 'bin/native/calico'), [], { CNI_COMMAND: 'VERSION' }],
      ]
    : []),
];
const times = cases.map(() => []);
for (let i = 0; i < runs; i++) {
  cases.forEach(([, cmd, args, env], j) => {
    const t0 = process.hrtime.bigint();
    const r = spawnSync(cmd, args, { env: { ...process.env, ...env }, input: '' });
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr}`);
    times[j].push(Number(process.hrtime.bigint() - t0) / 1e6);
  });
}
const fmt = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)].toFixed(1), min: s[0].toFixed(1) };
};
const base = fmt(times[0]);
for (const [j, [name]] of cases.entries()) {
  const f = fmt(times[j]);
  console.log(
    `${name.padEnd(16)} median ${f.median.padStart(7)} ms  min ${f.min.padStart(7)} ms  (+${(f.median - base.median).toFixed(1)} ms over node -e 0)`,
  );
}
