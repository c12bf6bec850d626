/**
 * BGP passwords from files: the SecretProvider for a node with no Kubernetes API to read Secrets
 * from (the etcd datastore outside Kubernetes). A calico-ts extension: `CALICO_BGP_SECRETS_DIR`
 * names a directory laid out as Kubernetes mounts Secrets as volumes, one directory per Secret and
 * one file per key, so a `secretKeyRef {name, key}` reads `<dir>/<name>/<key>`:
 *
 *   BirdBridge ── follow(names) ──► FileSecretProvider ── per followed name: read <dir>/<name>/*
 *       ▲                               again every `pollMs`
 *       └──── listener ◄── a followed secret's files changed (created, edited, removed)
 *
 * A file's whole content is the value, as in a Secret volume (no trailing newline is taken away).
 * Missing files give no value, and the bridge then keeps the sessions that need it down.
 * Values never reach a log line: logs name the secret and its keys only.
 * Thread-safety: single-threaded; one timer owned by this object.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SecretProvider } from '@calico-ts/bird-bridge';
import type { ClientConfig } from '@calico-ts/datastore';
import type { Logger } from '@calico-ts/felix';
import type { Env } from './env.js';
import { EnvSecretProvider, hasBgpPasswordEnv, LayeredSecretProvider } from './env-secrets.js';
import { kubeSecretProviderFor, secretsConnectionSource } from './kube-secrets.js';

/** The environment variable naming the directory of Secret files. */
export const BGP_SECRETS_DIR_ENV = 'CALICO_BGP_SECRETS_DIR';

export interface FileSecretProviderOptions {
  readonly dir: string;
  readonly log: Logger;
  /** How often followed secrets are read again; default 10 s; 0 turns polling off. */
  readonly pollMs?: number;
}

/** A Secret name or key as a single path component: what Kubernetes allows, nothing that climbs. */
const SAFE = /^[A-Za-z0-9._-]+$/;

function safe(part: string): boolean {
  return SAFE.test(part) && part !== '.' && part !== '..';
}

export class FileSecretProvider implements SecretProvider {
  readonly #o: FileSecretProviderOptions;
  readonly #data = new Map<string, Readonly<Record<string, string>>>();
  readonly #listeners = new Set<() => void>();
  #followed: readonly string[] = [];
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(opts: FileSecretProviderOptions) {
    this.#o = opts;
    const every = opts.pollMs ?? 10_000;
    if (every > 0) {
      this.#timer = setInterval(() => void this.#refresh(true), every);
      this.#timer.unref?.();
    }
  }

  async follow(names: readonly string[]): Promise<void> {
    if (this.#closed) return;
    this.#followed = [...new Set(names)];
    for (const k of [...this.#data.keys()]) if (!this.#followed.includes(k)) this.#data.delete(k);
    await this.#refresh(false);
  }

  value(name: string, key: string): string | undefined {
    if (!this.#followed.includes(name)) return undefined;
    const d = this.#data.get(name);
    return d && Object.hasOwn(d, key) ? d[key] : undefined;
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#followed = [];
    this.#data.clear();
    this.#listeners.clear();
  }

  /** Reads every followed secret; tells the listeners when one changed (if `notify`). */
  async #refresh(notify: boolean): Promise<void> {
    let changed = false;
    for (const name of this.#followed) {
      const next = await this.#read(name);
      const before = this.#data.get(name);
      if (JSON.stringify(before) === JSON.stringify(next)) continue;
      changed = true;
      if (next === undefined) this.#data.delete(name);
      else this.#data.set(name, next);
      this.#o.log.info(
        { secret: name, keys: next ? Object.keys(next).sort() : [], dir: this.#o.dir },
        next ? 'BGP password secret read from files' : 'BGP password secret has no files',
      );
    }
    if (changed && notify && !this.#closed) for (const l of [...this.#listeners]) l();
  }

  async #read(name: string): Promise<Record<string, string> | undefined> {
    if (!safe(name)) {
      this.#o.log.warn({ secret: name }, 'BGP password secret name is not a file name; not read');
      return undefined;
    }
    const dir = join(this.#o.dir, name);
    let entries: string[];
    try {
      entries = await readdir(dir);
    } catch {
      return undefined;
    }
    const out: Record<string, string> = {};
    // Kubernetes' own bookkeeping (`..data`, `..2024_…`) starts with two dots and is skipped.
    for (const key of entries.filter((e) => safe(e) && !e.startsWith('..')).sort()) {
      try {
        out[key] = await readFile(join(dir, key), 'utf8');
      } catch {
        // A directory or an unreadable file is not a key.
      }
    }
    return out;
  }
}

/**
 * Where this node's BGP passwords come from: `CALICO_BGP_PASSWORD_<SECRET>_<KEY>` variables first
 * (see env-secrets.ts), then the files under `CALICO_BGP_SECRETS_DIR` when it is set, else Secrets
 * through the Kubernetes API (`kubeSecretProviderFor`: the datastore's, or on etcd a kubeconfig or
 * in-cluster config, as upstream's confd), else nowhere; a session whose password cannot be had is
 * then kept down by the bridge, never brought up without it.
 */
export async function bgpSecretProviderFor(
  cfg: ClientConfig,
  env: Env,
  log: Logger,
): Promise<SecretProvider | undefined> {
  const next = await secretSourceFor(cfg, env, log);
  if (!hasBgpPasswordEnv(env)) return next;
  log.info({}, 'BGP passwords are read from CALICO_BGP_PASSWORD_* variables first');
  return new LayeredSecretProvider(new EnvSecretProvider(env, log), next);
}

async function secretSourceFor(
  cfg: ClientConfig,
  env: Env,
  log: Logger,
): Promise<SecretProvider | undefined> {
  const dir = env[BGP_SECRETS_DIR_ENV];
  if (dir) {
    log.info({ dir }, `BGP password secrets are read from files (${BGP_SECRETS_DIR_ENV})`);
    return new FileSecretProvider({ dir, log });
  }
  // With passwords in the environment and no Kubernetes API, there is nothing more to say.
  if (hasBgpPasswordEnv(env) && secretsConnectionSource(cfg, env) === 'none') return undefined;
  return kubeSecretProviderFor(cfg, env, log);
}
