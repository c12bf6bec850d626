/**
 * `get`: resources by kind and names, a whole kind, or the resources a file names; printed as
 * ps/wide tables, YAML, JSON, custom columns or a Go template. Missing resources are reported
 * after whatever was found, with upstream's text, and make the command fail.
 *
 * The common case, a table of a kind, loads only the table printer: the YAML, JSON and template
 * printers (printers.ts) and the file reader (load.ts, with YAML decoding and validation) are
 * imported when `-o` or `-f` asks for them.
 */
import { KINDS, type Kind } from '@calico-ts/api';
import { type Datastore, isDatastoreError } from '@calico-ts/datastore';
import { CtlError } from '../errors.js';
import { resolveCtlKind } from '../kinds.js';
import { KIND_TABLES, needsASNumber, type Obj } from '../output/columns.js';
import { listObject, type OutputFormat, parseOutputFormat, renderTables } from '../output/tables.js';
import { getResource, listResources } from '../resources/operations.js';
import type { CommandContext } from './context.js';

export interface GetArgs {
  kind?: string;
  names?: string[];
  filename?: string;
  recursive?: boolean;
  skipEmpty?: boolean;
  output?: string;
  namespace?: string;
  allNamespaces?: boolean;
  export?: boolean;
}

interface Target {
  kind: Kind;
  /** Empty: list. */
  name: string;
  /** Undefined for cluster kinds; '' for all namespaces. */
  namespace?: string;
}

function targetsFromArgs(args: GetArgs): Target[] {
  const kindText = args.kind ?? '';
  const kind = resolveCtlKind(kindText);
  if (!kind)
    throw new CtlError('usage', `Failed to get resources: resource type '${kindText}' is not supported`);
  const names = args.names && args.names.length > 0 ? args.names : [''];
  if (args.names && args.names.length > 0 && names.some((n) => n === '')) {
    throw new CtlError('usage', 'Failed to get resources: resource name may not be empty');
  }
  const cliNs = args.namespace ?? '';
  if (KINDS[kind].namespaced) {
    if (args.allNamespaces && cliNs !== '') {
      throw new CtlError(
        'usage',
        'Failed to get resources: cannot use both --namespace and --all-namespaces flags at the same time',
      );
    }
    const namespace = args.allNamespaces ? '' : cliNs || 'default';
    return names.map((name) => ({ kind, name, namespace }));
  }
  if (args.allNamespaces || cliNs !== '') {
    throw new CtlError('usage', `Failed to get resources: ${kind} is not namespaced`);
  }
  return names.map((name) => ({ kind, name }));
}

function stripForExport(r: Obj): Obj {
  const meta = { ...((r.metadata as Obj) ?? {}) };
  for (const k of [
    'namespace',
    'uid',
    'resourceVersion',
    'creationTimestamp',
    'deletionTimestamp',
    'deletionGracePeriodSeconds',
  ]) {
    delete meta[k];
  }
  return { ...r, metadata: meta };
}

async function globalASNumber(ds: Datastore): Promise<string> {
  try {
    const bgp = (await ds.get('BGPConfiguration', 'default')) as unknown as Obj;
    const asn = (bgp.spec as Obj | undefined)?.asNumber;
    return asn === undefined || asn === null ? '64512' : String(asn);
  } catch (e) {
    return isDatastoreError(e, 'not-found') ? '64512' : 'unknown';
  }
}

export async function getCommand(args: GetArgs, ds: Datastore, ctx: CommandContext): Promise<number> {
  const format: OutputFormat = parseOutputFormat(args.output ?? 'ps');
  let targets: Target[];
  if (args.filename !== undefined) {
    const { loadResources } = await import('./load.js');
    const loaded = await loadResources('get', { ...args, filename: args.filename }, ctx);
    targets = loaded.map((r) => {
      const meta = (r.resource.metadata ?? {}) as Obj;
      return {
        kind: r.kind,
        name: String(meta.name ?? ''),
        ...(KINDS[r.kind].namespaced ? { namespace: String(meta.namespace ?? '') } : {}),
      };
    });
    if (targets.length === 0) return 0;
  } else {
    targets = targetsFromArgs(args);
  }
  const nameSpecified = (args.names?.length ?? 0) > 0;

  const results: Obj[] = [];
  const errors: Error[] = [];
  for (const t of targets) {
    try {
      if (t.name !== '') {
        if (KINDS[t.kind].namespaced && t.namespace === '') {
          throw new CtlError('usage', 'cannot use --all-namespace flag for getting a single resource');
        }
        const r = await getResource(ds, t.kind, t.name, t.namespace);
        results.push(args.export && nameSpecified ? stripForExport(r) : r);
      } else {
        const list = await listResources(ds, t.kind, t.namespace || undefined);
        results.push(listObject(t.kind, list.items, list.revision));
      }
    } catch (e) {
      errors.push(e as Error);
    }
  }

  ctx.io.stdout(await render(format, results, args, ds, ctx));
  if (errors.length > 0)
    throw new CtlError((errors[0] as CtlError).code ?? 'failed', errors.map((e) => e.message).join('\n'));
  return 0;
}

async function render(
  format: OutputFormat,
  results: Obj[],
  args: GetArgs,
  ds: Datastore,
  ctx: CommandContext,
): Promise<string> {
  const printers = () => import('../output/printers.js');
  switch (format.kind) {
    case 'yaml':
      return (await printers()).renderYaml(results);
    case 'json':
      return (await printers()).renderJson(results);
    case 'go-template':
      return (await printers()).renderTemplate(results, format.template);
    case 'go-template-file': {
      let template: string;
      try {
        template = await ctx.io.readFile(format.path);
      } catch (e) {
        throw new CtlError('usage', `open ${format.path}: no such file or directory`, { cause: e });
      }
      return (await printers()).renderTemplate(results, template);
    }
    case 'ps':
    case 'wide':
    case 'custom-columns': {
      const printNamespace = !!args.allNamespaces || (args.namespace ?? '') !== '';
      const headingsFor = (kind: Kind) =>
        format.kind === 'custom-columns'
          ? format.headings
          : format.kind === 'wide'
            ? KIND_TABLES[kind].wide
            : KIND_TABLES[kind].ps;
      const needsAsn = results.some((r) => {
        const k = String(r.kind ?? '').replace(/List$/, '') as Kind;
        return k === 'Node' && needsASNumber(k, headingsFor(k));
      });
      return renderTables(results, {
        wide: format.kind === 'wide',
        ...(format.kind === 'custom-columns' ? { headings: format.headings } : {}),
        printNamespace,
        cells: { globalASNumber: needsAsn ? await globalASNumber(ds) : '64512' },
      });
    }
  }
}
