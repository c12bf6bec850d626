/**
 * What the command line receives from its host: I/O, a way to connect, and the host's own
 * facilities. main.ts gives the process's; tests give an in-memory datastore and pinned clocks.
 */
import type { Datastore, KVStore } from '@calico-ts/datastore';
import type { CommandIO } from '../io.js';
import type { Logger } from '../log.js';
import type { NodeHost } from '../node/node-host.js';
import type { SystemHost } from '../node/system-host.js';

/** Where `-c/--config` looks when not given. */
export const DEFAULT_CONFIG_PATH = '/etc/calico/calicoctl.cfg';

/** A connected datastore, as `CliDeps.connect` returns it; the session closes it after the command. */
export interface Connection {
  /** The typed client every datastore command works on. */
  datastore: Datastore;
  /** Raw keys, for datastore migration; absent where the backend has none. */
  kv?: KVStore;
  /** The kubeconfig the configuration names, if any (`cluster diags` hands it to kubectl). */
  kubeconfig?: string;
  /** Close the connection (called once, when the command is done). */
  close(): Promise<void>;
}

/** What the command line adds to the loaded configuration. */
export interface ConnectOptions {
  /** `--context`: the kubeconfig context to use (Kubernetes datastore), over the configuration's. */
  context?: string;
}

/** What `runCli` needs from its host. */
export interface CliDeps {
  /** The streams, files and environment commands read and write. */
  io: CommandIO;
  /** Load the client configuration (`-c` file, else env) and connect. */
  connect(configFile: string, log: Logger, options?: ConnectOptions): Promise<Connection>;
  /** Clock for log timestamps (tests pin it). */
  now?: () => number;
  /** Cluster GUID for a ClusterInformation calicoctl creates (tests pin it). */
  newClusterGUID?: () => string;
  /** This host, for `node status`. */
  nodeHost?: NodeHost;
  /** This host's kernel and programs, for `node checksystem`. */
  systemHost?: SystemHost;
  /** Pauses (deleting an IPPool waits briefly after disabling it); tests make it instant. */
  sleep?: (ms: number) => Promise<void>;
}
