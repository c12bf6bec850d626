/**
 * The status file upstream's kube-controllers keeps for its probes (`/status/status.json`, read by
 * `check-status -r` / `-l`): overall readiness and one condition per controller. Pure rendering
 * and checking; the program writes and reads the file.
 */
import type { ControllerStatus } from '@calico-ts/kube-controllers';

export interface StatusFile {
  readonly Readiness: boolean;
  readonly Conditions: Readonly<Record<string, { readonly Ready: boolean; readonly Reason: string }>>;
}

export const DEFAULT_STATUS_FILE = '/status/status.json';

/** Ready once every running controller has reconciled; unavailable ones are listed, not ready. */
export function renderStatus(
  running: readonly ControllerStatus[],
  unavailable: readonly string[],
): StatusFile {
  const Conditions: Record<string, { Ready: boolean; Reason: string }> = {};
  for (const s of running) {
    const failed = s.lastReport?.failed.length ?? 0;
    Conditions[s.name] =
      s.lastReconciled === undefined
        ? { Ready: false, Reason: 'not reconciled yet' }
        : failed > 0
          ? { Ready: true, Reason: `last reconcile could not write ${failed}; retrying` }
          : { Ready: true, Reason: '' };
  }
  for (const name of unavailable)
    Conditions[name] = { Ready: false, Reason: 'not available in this version' };
  const Readiness = running.length > 0 && running.every((s) => Conditions[s.name]!.Ready);
  return { Readiness, Conditions };
}

/** `-r` (readiness) or `-l` (liveness) against a status file's text: the exit code and why. */
export function checkStatus(flag: '-r' | '-l', text: string | undefined): { code: number; message: string } {
  if (text === undefined) return { code: 1, message: 'no status file yet' };
  let s: StatusFile;
  try {
    s = JSON.parse(text) as StatusFile;
  } catch {
    return { code: 1, message: 'status file is not JSON' };
  }
  if (flag === '-l') return { code: 0, message: 'live' };
  if (s.Readiness) return { code: 0, message: 'ready' };
  const why = Object.entries(s.Conditions ?? {})
    .filter(([, c]) => !c.Ready)
    .map(([n, c]) => `${n}: ${c.Reason}`)
    .join('; ');
  return { code: 1, message: `not ready${why ? `: ${why}` : ''}` };
}
