// How this project runs its images with podman: on runc, with resource limits the host allows.
//
// podman asks runc for RLIMIT_NOFILE 1048576 and RLIMIT_NPROC 32768 by default; where the host's
// hard limits are lower (this machine: 20000 open files), runc cannot set them and every container
// fails with "error setting rlimit type 7: operation not permitted". The open-file limit is taken
// from the host's own; the process limit is set well below the default that fails.
import { execFileSync } from 'node:child_process';

let nofile;

/** The host's hard limit of open files (`ulimit -Hn`). */
function hostNofile() {
  if (nofile === undefined) {
    const out = execFileSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).trim();
    nofile = /^\d+$/.test(out) ? Number(out) : 1024;
  }
  return nofile;
}

/** `podman run` and the flags every run here needs; append the caller's flags, image and args. */
export function podmanRun() {
  const n = hostNofile();
  return ['run', '--runtime', 'runc', '--ulimit', `nofile=${n}:${n}`, '--ulimit', 'nproc=16384:16384'];
}
