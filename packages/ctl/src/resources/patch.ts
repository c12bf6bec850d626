/**
 * Patches as `calicoctl patch` applies them (pure). Calico's API types declare no patch strategies,
 * so a strategic merge patch works like a JSON merge patch (RFC 7386): objects merge key by key,
 * `null` deletes a key, lists and scalars replace. The strategic directives `$patch: replace` and
 * `$patch: delete` on an object are honoured. `--type json` takes an RFC 6902 operation list.
 */
import { CtlError } from '../errors.js';

type Json = unknown;

function isObj(v: Json): v is Record<string, Json> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function mergePatch(target: Json, patch: Json): Json {
  if (!isObj(patch)) return structuredClone(patch);
  if (patch.$patch === 'replace') {
    const { $patch: _, ...rest } = patch;
    return structuredClone(rest);
  }
  if (patch.$patch === 'delete') return undefined;
  const out: Record<string, Json> = isObj(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys') continue;
    if (v === null) delete out[k];
    else {
      const merged = mergePatch(out[k], v);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    }
  }
  return out;
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw new CtlError('usage', `invalid JSON pointer ${JSON.stringify(path)}`);
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function getAt(doc: Json, path: string[]): Json {
  let cur = doc;
  for (const p of path) {
    if (Array.isArray(cur)) cur = cur[Number(p)];
    else if (isObj(cur)) cur = cur[p];
    else return undefined;
  }
  return cur;
}

function setAt(
  doc: Json,
  path: string[],
  value: Json,
  mode: 'add' | 'replace' | 'remove',
  full = `/${path.join('/')}`,
): Json {
  if (path.length === 0) return mode === 'remove' ? undefined : value;
  const [head, ...rest] = path;
  if (Array.isArray(doc)) {
    const arr = [...doc];
    const idx = head === '-' ? arr.length : Number(head);
    if (!Number.isInteger(idx) || idx < 0 || idx > arr.length)
      throw new CtlError('usage', `index ${head} out of range`);
    if (rest.length === 0) {
      if (mode === 'add') arr.splice(idx, 0, value);
      else if (idx >= arr.length) throw new CtlError('usage', `${full}: index out of range`);
      else if (mode === 'remove') arr.splice(idx, 1);
      else arr[idx] = value;
      return arr;
    }
    arr[idx] = setAt(arr[idx], rest, value, mode, full);
    return arr;
  }
  if (!isObj(doc)) throw new CtlError('usage', `path ${full} does not exist`);
  const obj = { ...doc };
  if (rest.length === 0) {
    if (mode !== 'add' && !(head! in obj)) throw new CtlError('usage', `path ${full} does not exist`);
    if (mode === 'remove') delete obj[head!];
    else obj[head!] = value;
    return obj;
  }
  if (!(head! in obj)) throw new CtlError('usage', `path ${full} does not exist`);
  obj[head!] = setAt(obj[head!], rest, value, mode, full);
  return obj;
}

export function jsonPatch(target: Json, ops: Json): Json {
  if (!Array.isArray(ops)) throw new CtlError('usage', 'a JSON patch must be a list of operations');
  let doc = structuredClone(target);
  for (const op of ops) {
    if (!isObj(op) || typeof op.op !== 'string' || typeof op.path !== 'string') {
      throw new CtlError('usage', 'each JSON patch operation needs "op" and "path"');
    }
    const path = pointer(op.path);
    switch (op.op) {
      case 'add':
      case 'replace':
        doc = setAt(doc, path, structuredClone(op.value), op.op);
        break;
      case 'remove':
        doc = setAt(doc, path, undefined, 'remove');
        break;
      case 'test':
        if (JSON.stringify(getAt(doc, path)) !== JSON.stringify(op.value)) {
          throw new CtlError('failed', `test operation failed at ${op.path}`);
        }
        break;
      case 'move':
      case 'copy': {
        if (typeof op.from !== 'string') throw new CtlError('usage', `"${op.op}" needs "from"`);
        const from = pointer(op.from);
        const v = structuredClone(getAt(doc, from));
        if (v === undefined) throw new CtlError('usage', `path ${op.from} does not exist`);
        if (op.op === 'move') doc = setAt(doc, from, undefined, 'remove');
        doc = setAt(doc, path, v, 'add');
        break;
      }
      default:
        throw new CtlError('usage', `unknown JSON patch operation ${JSON.stringify(op.op)}`);
    }
  }
  return doc;
}
