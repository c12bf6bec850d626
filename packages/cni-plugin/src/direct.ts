/**
 * One invocation run in this process, start to finish: the path taken when there is no plugin
 * service to hand it to (service/client.ts), and for flags and VERSION. The datastore client
 * (etcd over node:http2) is loaded only by commands that use it, so `-v` and VERSION stay fast.
 */
import { loggerOf } from '@calico-ts/api/log';
import { readStdinSync, writeStdout } from '@calico-ts/api/stdio';
import { openKubeOnce, openOnce, pluginEffects } from './effects.js';
import { FileLock } from './io/host-lock.js';
import { memoizedReader } from './io/kube.js';
import { type PluginEffects, type Program, runPlugin } from './plugin.js';
import type { Env } from './spec/env.js';

export interface DirectRun {
  program: Program;
  args: readonly string[];
  env: Env;
  version: string;
  selfPath: string | undefined;
  /** The config, when the caller has already read stdin. */
  stdin?: string;
}

export async function runDirect(r: DirectRun): Promise<number> {
  // The lock logs through the invocation's logger, which the effects below make.
  const lockLog = loggerOf((level, msg, fields) => effects.log[level](fields ?? {}, msg));
  const effects: PluginEffects = pluginEffects({
    program: r.program,
    version: r.version,
    readStdin: async () => r.stdin ?? readStdinSync({ skipTerminal: true }),
    selfPath: r.selfPath,
    openBackend: openOnce(async (conf, env, log) => {
      const t0 = performance.now();
      const { openCalicoBackend } = await import('./io/calico-backend.js');
      const t1 = performance.now();
      const backend = await openCalicoBackend(conf, env, log);
      log.debug(
        {
          loadMs: Math.round(t1 - t0),
          connectMs: Math.round(performance.now() - t1),
          sinceStartMs: Math.round(performance.now()),
        },
        'opened the datastore',
      );
      return backend;
    }),
    openKube: openKubeOnce(async (conf, env) => {
      const { KubeApiReader, kubeApiSettings, openKubeHttp } = await import('./io/kube-api.js');
      const http = await openKubeHttp(kubeApiSettings(conf.kubeApi, env), env);
      return memoizedReader(new KubeApiReader(http, true));
    }),
    lock: new FileLock({ log: lockLog }),
  });
  const out = await runPlugin(r.program, r.args, r.env, effects, r.version);
  writeStdout(out.stdout);
  return out.exitCode;
}
