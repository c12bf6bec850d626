/**
 * Where the bridge gets BGP password values from, when they can change while it runs.
 *
 *   BirdBridge ── follow(names) ──► SecretProvider (calico-node: Secrets read and watched through
 *       ▲        ── value(name, key)        the Kubernetes API; tests: MemorySecretProvider)
 *       └──────── subscribe(listener) ◄── a followed secret changed ──► one more render
 *
 * API: before each render the bridge calls `follow` with the secret names the configuration
 * references (see `secretRefsOf`) and waits for it: a provider resolves once every newly followed
 * secret was read once (or could not be), and stops following names no longer given. `value`
 * answers from what it holds; a listener runs after a followed secret's data changed.
 * Design: the bridge never does I/O for secrets; a provider never renders. A value is only ever
 * passed to the renderer, never into a log line or an error message.
 */
export interface SecretProvider {
  /** Follow exactly these secrets; resolves when each newly followed one was read once or failed. */
  follow(names: readonly string[]): Promise<void>;
  /** `key` of secret `name`, if followed, present and holding that key. */
  value(name: string, key: string): string | undefined;
  /** Calls `listener` after a followed secret changed; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void;
  /** Stops following everything. */
  close(): Promise<void>;
}

/**
 * An in-memory provider: secrets set by the program (static passwords, tests). Same contract as
 * a provider backed by an API server: only followed names are answered, and a change to a
 * followed secret notifies the listeners.
 */
export class MemorySecretProvider implements SecretProvider {
  readonly #secrets = new Map<string, Readonly<Record<string, string>>>();
  readonly #listeners = new Set<() => void>();
  #followed = new Set<string>();
  #closed = false;

  constructor(secrets: Readonly<Record<string, Readonly<Record<string, string>>>> = {}) {
    for (const [name, data] of Object.entries(secrets)) this.#secrets.set(name, { ...data });
  }

  async follow(names: readonly string[]): Promise<void> {
    if (!this.#closed) this.#followed = new Set(names);
  }

  value(name: string, key: string): string | undefined {
    if (!this.#followed.has(name)) return undefined;
    const data = this.#secrets.get(name);
    return data && Object.hasOwn(data, key) ? data[key] : undefined;
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#followed = new Set();
    this.#listeners.clear();
  }

  /** Creates or replaces secret `name` (undefined: deletes it); notifies if it is followed. */
  set(name: string, data: Readonly<Record<string, string>> | undefined): void {
    if (data === undefined) this.#secrets.delete(name);
    else this.#secrets.set(name, { ...data });
    if (this.#followed.has(name)) for (const l of [...this.#listeners]) l();
  }

  /** The names followed now. */
  followed(): string[] {
    return [...this.#followed].sort();
  }
}
