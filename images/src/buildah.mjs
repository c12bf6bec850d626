// The buildah and podman calls the image builds make, each a child process whose failure names the
// command and carries its stderr. Root only (buildah keeps images in /var/lib/containers/storage).
import { execFile } from 'node:child_process';

/** Runs `cmd args`, resolves its stdout; rejects with the command line and its stderr. */
export function run(cmd, args, { input, timeoutMs = 20 * 60_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = execFile(
      cmd,
      args,
      { maxBuffer: 64 * 1024 * 1024, timeout: timeoutMs, env: { ...process.env, LC_ALL: 'C' } },
      (err, stdout, stderr) => {
        if (err) {
          const why = stderr.trim().split('\n').slice(-12).join('\n') || err.message;
          reject(new Error(`${cmd} ${args.join(' ')} failed:\n${why}`));
        } else resolve(stdout);
      },
    );
    if (input !== undefined) child.stdin.end(input);
  });
}

export const buildah = (...args) => run('buildah', args);

/** Whether the local container storage has `ref`. */
export async function imageExists(ref) {
  try {
    await buildah('inspect', '--type', 'image', '--format', '{{.FromImageID}}', ref);
    return true;
  } catch {
    return false;
  }
}

/** The image's size in bytes as the storage reports it (all layers). */
export async function imageSize(ref) {
  const out = await run('podman', ['image', 'inspect', '--format', '{{.Size}}', ref]);
  return Number(out.trim());
}

/** The image's layer digests, bottom first. */
export async function imageLayers(ref) {
  const out = await run('podman', ['image', 'inspect', '--format', '{{json .RootFS.Layers}}', ref]);
  return JSON.parse(out.trim());
}

export function mib(bytes) {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
