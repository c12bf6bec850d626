/**
 * The command table: every top-level command of calicoctl, in the order `calicoctl --help` lists
 * them. Each entry is its own module (name, usage, run); cli.ts builds the parser from this list.
 */
import { apply } from './apply.js';
import { cluster } from './cluster.js';
import type { CtlCommand } from './command.js';
import { completion } from './completion.js';
import { create } from './create.js';
import { datastore } from './datastore.js';
import { deleteCmd } from './delete.js';
import { get } from './get.js';
import { ipam } from './ipam.js';
import { label } from './label.js';
import { node } from './node.js';
import { patch } from './patch.js';
import { policy } from './policy.js';
import { replace } from './replace.js';
import { validate } from './validate.js';
import { version } from './version.js';

export const COMMAND_TABLE: readonly CtlCommand[] = [
  create,
  replace,
  apply,
  patch,
  deleteCmd,
  get,
  label,
  validate,
  version,
  datastore,
  completion,
  ipam,
  node,
  cluster,
  policy,
];
