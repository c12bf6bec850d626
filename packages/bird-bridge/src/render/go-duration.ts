/**
 * Go `time.ParseDuration` text ("90s", "1m30s", "1.5h", "300ms") to seconds. Used for BGPPeer
 * `maxRestartTime`/`keepaliveTime` and BGPConfiguration `nodeMeshMaxRestartTime`, which BIRD takes
 * as whole seconds (upstream rounds to the nearest second).
 */
const UNIT_SECONDS: Record<string, number> = {
  ns: 1e-9,
  us: 1e-6,
  µs: 1e-6,
  μs: 1e-6,
  ms: 1e-3,
  s: 1,
  m: 60,
  h: 3600,
};

/** Seconds in a Go duration, or undefined if the text is not one. */
export function durationSeconds(text: string): number | undefined {
  if (text === '0') return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/gy;
  let total = 0;
  let pos = 0;
  for (;;) {
    re.lastIndex = pos;
    const m = re.exec(text);
    if (!m) break;
    total += Number(m[1]) * UNIT_SECONDS[m[2]!]!;
    pos = re.lastIndex;
  }
  return pos === text.length && pos > 0 ? total : undefined;
}

/** Whole seconds, rounded half away from zero like Go's `math.Round`. */
export function roundedSeconds(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const s = durationSeconds(text);
  return s === undefined ? undefined : Math.round(s);
}
