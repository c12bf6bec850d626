/**
 * The pod MTU file (upstream writes /var/lib/calico/mtu for the CNI plugin to read): written only
 * when its content would change, through a temporary file and a rename so a reader never sees half
 * a number. `PodMtuFile` decides when: after an apply that follows a change of the pools.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { DataplaneDiff, PoolEncaps } from '../calc/types.js';
import { hostMtuOf, podMtu } from '../config/derived.js';
import type { FelixConfig } from '../config/params.js';
import type { DataplaneNetOps } from '../dataplane/linux-dataplane.js';
import { errorMessage, type Logger } from '../logging.js';

export async function writeMtuFile(path: string, mtu: number): Promise<boolean> {
  const text = `${mtu}\n`;
  try {
    if ((await readFile(path, 'utf8')) === text) return false;
  } catch {
    // absent: write it
  }
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, text);
  await rename(tmp, path);
  return true;
}

export interface PodMtuFileOptions {
  readonly net: Pick<DataplaneNetOps, 'listLinks'>;
  readonly netns?: string;
  readonly log: Logger;
  /** True once Felix is stopping: no more retries. */
  readonly stopped: () => boolean;
}

/**
 * The MTU file kept in step with the pools: rewritten after an apply when the pools or their
 * encapsulations changed since the last write (and at the first), retried every second on its
 * own when writing fails.
 */
export class PodMtuFile {
  readonly #o: PodMtuFileOptions;
  #dirty = true;
  #encaps: PoolEncaps = { vxlan: false, ipip: false };

  constructor(o: PodMtuFileOptions) {
    this.#o = o;
  }

  /** Notes what a diff changed of the pools. */
  onUpdate(diff: DataplaneDiff): void {
    if (diff.poolEncaps) this.#encaps = diff.poolEncaps;
    if (diff.poolEncaps || diff.poolsUpdated.length > 0 || diff.poolsRemoved.length > 0) this.#dirty = true;
  }

  /** Writes the file if something changed; `config()` is the configuration at the time. */
  async maybeWrite(config: () => FelixConfig): Promise<void> {
    if (!this.#dirty) return;
    this.#dirty = false;
    const cfg = config();
    try {
      const links = await this.#o.net.listLinks(this.#o.netns);
      const mtu = podMtu(cfg, hostMtuOf(cfg, links), this.#encaps);
      if (await writeMtuFile(cfg.MTUFilePath, mtu)) {
        this.#o.log.info({ mtu, path: cfg.MTUFilePath }, 'pod MTU file written');
      }
    } catch (e) {
      this.#dirty = true;
      this.#o.log.warn({ err: errorMessage(e) }, 'writing the pod MTU file failed; retrying');
      // No later apply may come to retry it: try again on our own.
      if (!this.#o.stopped()) setTimeout(() => void this.maybeWrite(config), 1000).unref();
    }
  }
}
