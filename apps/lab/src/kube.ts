/**
 * The lab's Kubernetes control plane (both datastores) and its clients:
 *
 *   lab up:   certificates + admin kubeconfig (openssl, in <state>/kube) ─► kube-apiserver in the
 *             etcd namespace on the lab's etcd (under /registry), https://198.18.0.2:6443 ─► /livez
 *             ─► the v1 Nodes and, on the Kubernetes datastore, the CRDs (kubectl apply
 *             --server-side) ─► CRDs established ─► calico-kube-controllers, ready by its `-r` probe
 *   kubectl:  the machine's kubectl run inside the etcd namespace with the lab's kubeconfig and a
 *             discovery cache in the state directory (nothing is written to ~/.kube)
 *   KubeApi:  node:https with the admin certificate, for the few objects `lab ns/pod` make; only
 *             works inside the etcd namespace (main.ts re-enters it), like the datastore commands
 *
 * The API server and kube-controllers are recorded processes like etcd: `lab down` stops them by
 * PID and start time.
 */
import { readFileSync } from 'node:fs';
import { Agent, request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { kubeControllersContainerName, kubeControllersProbeCommand } from './containers.js';
import { errorMessage, LabError } from './errors.js';
import { type KubePlan, kubePlanOf, type LabPlan } from './plan.js';
import { execInContainer } from './podman.js';
import type { Artifacts } from './prereqs.js';
import { runAsync } from './processes.js';
import { kubeControllersEnv } from './program-config.js';

export { kubeControllersEnv };

/**
 * kube-controllers' own probe (`-r` readiness, `-l` liveness) on the lab's status file; with
 * `--images`, the Deployment's probe (`check-status`) in its container.
 */
export async function kubeControllersProbe(
  plan: LabPlan,
  arts: Artifacts,
  flag: '-r' | '-l',
): Promise<{ ok: boolean; message: string }> {
  const r = plan.images
    ? await execInContainer(
        plan.etcdNetns,
        kubeControllersContainerName(plan),
        kubeControllersProbeCommand(flag),
      )
    : await runAsync([process.execPath, arts.kubeControllers, flag], {
        env: kubeControllersEnv(plan, PATH),
        timeoutMs: 10_000,
      });
  return { ok: r.status === 0, message: (r.stdout + r.stderr).trim() || `exit ${r.status}` };
}

const PATH = process.env.PATH || '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

type Obj = Record<string, unknown>;

/** Where kubectl keeps its discovery and HTTP caches for this lab (inside the state directory). */
export function kubectlCacheDir(kube: KubePlan): string {
  return join(kube.dir, 'kubectl-cache');
}

/** kubectl's environment: `base` with the lab's kubeconfig and cache (nothing goes to ~/.kube). */
export function kubectlEnv(
  kube: KubePlan,
  base: Readonly<Record<string, string | undefined>> = { PATH },
): Record<string, string | undefined> {
  return { ...base, KUBECONFIG: kube.kubeconfig, KUBECACHEDIR: kubectlCacheDir(kube) };
}

/** `nsenter --net=<etcd netns> kubectl ARGS` with the lab's kubeconfig, output captured. */
export function runKubectl(
  plan: LabPlan,
  kubectl: string,
  args: readonly string[],
  opts: { input?: string; timeoutMs?: number } = {},
): Promise<{ status: number; stdout: string; stderr: string }> {
  const kube = kubePlanOf(plan, 'kubectl');
  return runAsync(['nsenter', `--net=/run/netns/${plan.etcdNetns}`, kubectl, ...args], {
    env: kubectlEnv(kube),
    ...(opts.input !== undefined ? { input: opts.input } : {}),
    timeoutMs: opts.timeoutMs ?? 60_000,
  });
}

/** An API error with the server's status code and message. */
export class KubeApiError extends LabError {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(status === 404 ? 'not-found' : 'command', message);
  }
}

/**
 * A small client for the objects the lab makes (Namespaces, ServiceAccounts, Pods): JSON over
 * node:https with the admin client certificate. Thread-safety: any number of concurrent calls.
 */
export class KubeApi {
  readonly #server: URL;
  readonly #agent: Agent;

  constructor(kube: KubePlan) {
    this.#server = new URL(kube.apiServerUrl);
    const file = (name: string) => readFileSync(join(kube.dir, name));
    try {
      this.#agent = new Agent({
        keepAlive: true,
        ca: file('ca.pem'),
        cert: file('admin.pem'),
        key: file('admin-key.pem'),
      });
    } catch (e) {
      throw new LabError(
        'state',
        `the lab's API server credentials in ${kube.dir} cannot be read: ${errorMessage(e)}`,
      );
    }
  }

  close(): void {
    this.#agent.destroy();
  }

  request(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<Obj> {
    const text = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = httpsRequest(
        {
          method,
          hostname: this.#server.hostname,
          port: this.#server.port,
          path,
          agent: this.#agent,
          timeout: 30_000,
          headers: {
            Accept: 'application/json',
            ...(text !== undefined ? { 'Content-Type': 'application/json' } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const raw = Buffer.concat(chunks).toString('utf8');
            let parsed: Obj = {};
            try {
              parsed = raw ? (JSON.parse(raw) as Obj) : {};
            } catch {
              parsed = { message: raw.trim() };
            }
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) resolve(parsed);
            else
              reject(
                new KubeApiError(status, `${method} ${path}: ${String(parsed.message ?? `HTTP ${status}`)}`),
              );
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error('no answer in 30 s')));
      req.on('error', (e) =>
        reject(
          new LabError(
            'command',
            `the lab's API server ${this.#server.origin} did not answer ${method} ${path}: ${errorMessage(e)}`,
          ),
        ),
      );
      req.end(text);
    });
  }

  /** The object, or undefined when there is none. */
  async get(path: string): Promise<Obj | undefined> {
    try {
      return await this.request('GET', path);
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return undefined;
      throw e;
    }
  }

  /** POST to the collection; `exists` when an object of that name is already there. */
  async create(collection: string, obj: Obj): Promise<'created' | 'exists'> {
    try {
      await this.request('POST', collection, obj);
      return 'created';
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 409) return 'exists';
      throw e;
    }
  }

  /** DELETE at once (grace period 0: no kubelet finishes a graceful delete); false when gone already. */
  async deleteNow(path: string): Promise<boolean> {
    try {
      await this.request('DELETE', path, {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        gracePeriodSeconds: 0,
        propagationPolicy: 'Background',
      });
      return true;
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return false;
      throw e;
    }
  }
}

/** A client on the lab's API server for one command (closed afterwards). */
export async function withKubeApi<T>(plan: LabPlan, fn: (api: KubeApi) => Promise<T>): Promise<T> {
  const api = new KubeApi(kubePlanOf(plan, 'this command'));
  try {
    return await fn(api);
  } finally {
    api.close();
  }
}
