/**
 * The environment variables a program reads, found in its source rather than listed here, so a
 * manifest that sets a variable nothing reads (a typo, an upstream setting this implementation does
 * not have) fails the test.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLIENT_CONFIG_FIELDS } from '@calico-ts/datastore';
import { PARAMS } from '@calico-ts/felix';
import { root } from '../scripts/helm.mjs';

const NAME = '[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.test.ts'))
    .map((e) => join(e.parentPath, e.name));
}

function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/**
 * Names the sources of `dir` read from an environment: `env.NAME`, `env['NAME']`, and upper-case
 * string literals (the names passed to helpers such as `nonEmpty(env, 'NAME')`). Comments do not
 * count.
 */
export function envNamesIn(dir: string): Set<string> {
  const names = new Set<string>();
  const member = new RegExp(`\\b(?:env|raw|rawEnv)(?:\\?)?\\.(${NAME})\\b`, 'g');
  const literal = new RegExp(`['"\`](${NAME})['"\`]`, 'g');
  for (const file of sourceFiles(dir)) {
    const code = stripComments(readFileSync(file, 'utf8'));
    for (const m of code.matchAll(member)) names.add(m[1]!);
    for (const m of code.matchAll(literal)) names.add(m[1]!);
  }
  return names;
}

/** The datastore client's variables (each also read with a CALICO_ prefix). */
export function clientConfigEnvNames(): Set<string> {
  const names = new Set<string>();
  for (const f of Object.values(CLIENT_CONFIG_FIELDS) as { env?: string }[]) {
    if (f.env) {
      names.add(f.env);
      names.add(`CALICO_${f.env}`);
    }
  }
  return names;
}

/** Felix's parameters as FELIX_<NAME>, upper-cased as the manifests spell them. */
export function felixEnvNames(): Set<string> {
  return new Set(PARAMS.map((p) => `FELIX_${String(p.name).toUpperCase()}`));
}

/** Everything calico-node reads: its own variables, the datastore client's, Felix's. */
export function calicoNodeEnvNames(): Set<string> {
  return new Set([
    ...envNamesIn(join(root, 'apps/calico-node/src')),
    ...clientConfigEnvNames(),
    ...felixEnvNames(),
  ]);
}

/** Everything install-cni reads (placeholders' variables included). */
export function installCniEnvNames(): Set<string> {
  return envNamesIn(join(root, 'apps/cni/src'));
}

/** The placeholders install-cni fills in a network config template (`__NAME__`). */
export function installCniPlaceholders(): Set<string> {
  const code = stripComments(readFileSync(join(root, 'apps/cni/src/config.ts'), 'utf8'));
  return new Set([...code.matchAll(/\b(__[A-Z0-9_]+__):/g)].map((m) => m[1]!));
}

/** What calico-kube-controllers reads: its program's variables and the datastore client's. */
export function kubeControllersEnvNames(): Set<string> {
  return new Set([...envNamesIn(join(root, 'apps/kube-controllers/src')), ...clientConfigEnvNames()]);
}
