/**
 * BGP passwords from environment variables: a calico-ts extension for nodes that take their
 * configuration from the environment (a systemd unit, `env: valueFrom: secretKeyRef` in a pod
 * spec) rather than from Secret files or a Kubernetes API.
 *
 *   secretKeyRef {name: "bgp-secrets", key: "tor-1"}  ──►  CALICO_BGP_PASSWORD_BGP_SECRETS_TOR_1
 *
 * The variable's name is the prefix, the Secret's name, `_`, and the key, upper-cased, with every
 * character that is not a letter or a digit turned into `_`. Two references the mangling cannot
 * tell apart (secret `a-b` key `c` and secret `a` key `b-c`; or secrets `x.y` and `x-y`) are both
 * refused, with a warning, so a session never runs with another session's password: it is kept
 * down instead. Values never reach a log line. The environment does not change while the process
 * runs, so nothing is re-read and listeners are never called.
 *
 * `LayeredSecretProvider` puts this provider in front of another (files, the Kubernetes API): a
 * reference with its variable set is answered from the environment, any other by the next one.
 */
import type { SecretProvider } from '@calico-ts/bird-bridge';
import type { Logger } from '@calico-ts/felix';
import type { Env } from './env.js';

/** The prefix of the environment variables holding BGP passwords. */
export const BGP_PASSWORD_ENV_PREFIX = 'CALICO_BGP_PASSWORD_';

function mangle(part: string): string {
  return part.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}

/** The environment variable that holds key `key` of Secret `name`. */
export function bgpPasswordEnvName(name: string, key: string): string {
  return `${BGP_PASSWORD_ENV_PREFIX}${mangle(name)}_${mangle(key)}`;
}

/** Whether `env` sets any BGP password variable. */
export function hasBgpPasswordEnv(env: Env): boolean {
  return Object.keys(env).some(
    (k) => k.startsWith(BGP_PASSWORD_ENV_PREFIX) && k.length > BGP_PASSWORD_ENV_PREFIX.length,
  );
}

export class EnvSecretProvider implements SecretProvider {
  readonly #env: Env;
  readonly #log: Logger;
  #followed: readonly string[] = [];
  readonly #warned = new Set<string>();

  constructor(env: Env, log: Logger) {
    this.#env = env;
    this.#log = log;
  }

  async follow(names: readonly string[]): Promise<void> {
    this.#followed = [...new Set(names)];
  }

  /** Whether the variable for (name, key) is set, whatever it would answer. */
  has(name: string, key: string): boolean {
    return this.#followed.includes(name) && this.#env[bgpPasswordEnvName(name, key)] !== undefined;
  }

  value(name: string, key: string): string | undefined {
    if (!this.has(name, key)) return undefined;
    const variable = bgpPasswordEnvName(name, key);
    const rivals = this.#followed.filter(
      (other) => other !== name && variable.startsWith(`${BGP_PASSWORD_ENV_PREFIX}${mangle(other)}_`),
    );
    if (rivals.length > 0) {
      const why = `${variable} could belong to secret ${[name, ...rivals].sort().join(' or ')}`;
      if (!this.#warned.has(why)) {
        this.#warned.add(why);
        this.#log.warn(
          { variable, secrets: [name, ...rivals].sort() },
          `BGP password variable is ambiguous (${why}); not used: rename a secret or use CALICO_BGP_SECRETS_DIR`,
        );
      }
      return undefined;
    }
    return this.#env[variable];
  }

  subscribe(_listener: () => void): () => void {
    return () => {};
  }

  async close(): Promise<void> {
    this.#followed = [];
  }
}

/**
 * The environment first, then `next`: a reference whose variable is set is the environment's to
 * answer (also when it refuses an ambiguous one), any other is `next`'s.
 */
export class LayeredSecretProvider implements SecretProvider {
  constructor(
    readonly env: EnvSecretProvider,
    readonly next: SecretProvider | undefined,
  ) {}

  async follow(names: readonly string[]): Promise<void> {
    await this.env.follow(names);
    await this.next?.follow(names);
  }

  value(name: string, key: string): string | undefined {
    if (this.env.has(name, key)) return this.env.value(name, key);
    return this.next?.value(name, key);
  }

  subscribe(listener: () => void): () => void {
    return this.next?.subscribe(listener) ?? (() => {});
  }

  async close(): Promise<void> {
    await this.env.close();
    await this.next?.close();
  }
}
