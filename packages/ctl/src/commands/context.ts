/**
 * What every command receives besides its own arguments: its I/O and a logger. Commands that
 * touch the datastore also receive a connected `Datastore`; they never load configuration or
 * open connections themselves (see `cli.ts`).
 */
import type { CommandIO } from '../io.js';
import type { Logger } from '../log.js';

export interface CommandContext {
  io: CommandIO;
  log: Logger;
  /** Cluster GUID source for a new ClusterInformation (tests pin it). */
  newClusterGUID?: () => string;
}
