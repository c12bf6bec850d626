/**
 * Finds logger shapes declared outside `@calico-ts/api/log`: what the one-logger test scans the
 * workspace with. A shape is
 *
 * - an interface or object type with two or more of the level members (`error`, `warn`, `info`,
 *   `debug`) that does not extend `Logger` (a logger's own extras, such as the CNI plugin's
 *   `setLevel`, extend it);
 * - a function type whose first parameter is a level (`(level, message, …) => void`);
 * - a `log` property or parameter typed as a function (`log?: (msg: string) => void`).
 *
 * Regular expressions over the text, comments removed first: enough for this code base's style,
 * and the test shows them on planted examples and lookalikes.
 */

export interface LoggerShape {
  readonly file: string;
  readonly line: number;
  readonly text: string;
}

const LEVEL_MEMBER = /^\s*(?:readonly\s+)?(error|warn|info|debug)\??\s*[:(]/gm;

function withoutComments(source: string): string {
  // Keeps line breaks so line numbers stay right.
  return source
    .replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' '))
    .replace(/(^|[^:'"`])\/\/.*$/gm, (_m, p: string) => p);
}

function lineOf(source: string, index: number): number {
  return source.slice(0, index).split('\n').length;
}

/** The body of the `{ … }` that opens at `open`, braces balanced. */
function bodyAt(source: string, open: number): string {
  let depth = 0;
  for (let i = open; i < source.length; i++) {
    if (source[i] === '{') depth++;
    else if (source[i] === '}' && --depth === 0) return source.slice(open + 1, i);
  }
  return source.slice(open + 1);
}

export function findLoggerShapes(file: string, text: string): LoggerShape[] {
  const source = withoutComments(text);
  const out: LoggerShape[] = [];
  const found = (index: number, what: string) => out.push({ file, line: lineOf(source, index), text: what });

  const declaration = /\b(?:interface\s+(\w+)([^{]*)|type\s+(\w+)\s*(?:<[^=]*>)?\s*=\s*)\{/g;
  for (const m of source.matchAll(declaration)) {
    const heritage = m[2] ?? '';
    if (/\bextends\b[^{]*\bLogger\b/.test(heritage)) continue;
    const body = bodyAt(source, m.index + m[0].length - 1);
    // Only the body's own members: nested object types are their own declarations.
    const levels = new Set([...body.matchAll(LEVEL_MEMBER)].map((l) => l[1]));
    if (levels.size >= 2) found(m.index, `${m[1] ?? m[3]}: ${[...levels].join(', ')}`);
  }
  for (const m of source.matchAll(/\btype\s+(\w+)\s*=\s*\(\s*level\b/g))
    found(m.index, `${m[1]}: (level, …) => …`);
  for (const m of source.matchAll(/\blog\??\s*:\s*\(/g)) found(m.index, 'log typed as a function');
  return out;
}
