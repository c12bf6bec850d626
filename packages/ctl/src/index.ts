/**
 * @calico-ts/ctl: calicoctl as a library. `runCli` is the whole command line with injected I/O and
 * datastore connection; the command functions and output formatting are usable on their own, and so
 * are the resource operations under them (checks before a write, create/apply/update/delete with
 * upstream's semantics and error texts, patches), which calico-apiserver serves through Kubernetes.
 */
export { type CliDeps, type Connection, DEFAULT_CONFIG_PATH, runCli } from './cli.js';
export { baseVersion, checkVersionMismatch, ensureInitialized } from './cluster.js';
export { completionCommand } from './commands/completion.js';
export type { CommandContext } from './commands/context.js';
export {
  EXPORT_KINDS,
  exportCommand,
  importCommand,
  lockCommand,
  type MigrateStore,
  unlockCommand,
} from './commands/datastore.js';
export { type GetArgs, getCommand } from './commands/get.js';
export { type LabelArgs, labelCommand } from './commands/label.js';
export type { FileArgs } from './commands/load.js';
export { parseExport } from './commands/migration-file.js';
export { nodeStatusCommand } from './commands/node.js';
export { type PatchArgs, patchCommand } from './commands/patch.js';
export { validateCommand } from './commands/validate.js';
export { parseGoDuration, versionCommand } from './commands/version.js';
export {
  applyCommand,
  type CreateArgs,
  createCommand,
  type DeleteArgs,
  deleteCommand,
  replaceCommand,
  unenforcedWarnings,
} from './commands/write.js';
export { CTL_ERROR_CODES, CtlError, type CtlErrorCode, EXIT_FAILURE, EXIT_OK } from './errors.js';
export { type CommandIO, type MemoryIO, memoryIO } from './io.js';
export { kindNames, resolveCtlKind } from './kinds.js';
export { createLogger, type Logger, type LogLevel, parseLogLevel } from './log.js';
export { type BgpPeer, parseBirdProtocols, renderPeerTable } from './node/bird-status.js';
export { birdSocketDirs, type NodeHost, systemNodeHost } from './node/node-host.js';
export { KIND_TABLES } from './output/columns.js';
export { renderGoTemplate } from './output/go-template.js';
export { renderJson, renderTemplate, renderYaml, toYaml } from './output/printers.js';
export { type OutputFormat, parseOutputFormat, renderTables } from './output/tables.js';
export { type KddAction, kddRefusal } from './resources/kdd-rules.js';
export { deleteNode, type NodeDeletionOptions, type NodeIpam } from './resources/node-deletion.js';
export {
  applyResource,
  createResource,
  deleteResource,
  describeError,
  getResource,
  listResources,
  type PoolDeletion,
  replaceForUpdate,
  type UpdateOptions,
  updateResource,
} from './resources/operations.js';
export { jsonPatch, mergePatch } from './resources/patch.js';
export {
  formatProblems,
  type Prepared,
  type PreparedResource,
  type PrepareOptions,
  type Problem,
  prepareDocuments,
  type ResourceAction,
  unsupportedOperation,
} from './resources/prepare.js';
export type { SourceDocument } from './resources/read-documents.js';
export { CLIENT_VERSION } from './version.js';
