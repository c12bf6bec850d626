/**
 * The v1 `node` kind → Node: the BGP addresses kept as written (with their prefix), the AS number
 * in any of v1's spellings, the orchestrator references, the name made a valid v3 node name.
 */
import { parseCidrOrIP } from '../../net/cidr.js';
import type { Node } from '../../resources/index.js';
import { type FieldPath, type Obj, optList, optString, readObj, reqString } from '../fields.js';
import { convertNodeName, formatCidrAsWritten } from '../names.js';
import { API_V3, type Converted, renamedNote } from './converted.js';
import { readASNumber } from './readers.js';

export function convertNode(doc: Obj, at: FieldPath): Converted {
  const mat = at.child('metadata');
  const md = readObj(doc.metadata, mat, ['name'], false);
  const name = reqString(md, 'name', mat);
  const sat = at.child('spec');
  const spec = readObj(doc.spec, sat, ['bgp', 'orchRefs']);

  let bgp: { asNumber?: number; ipv4Address?: string; ipv6Address?: string } | undefined;
  if (spec.bgp !== undefined && spec.bgp !== null) {
    const bat = sat.child('bgp');
    const b = readObj(spec.bgp, bat, ['asNumber', 'ipv4Address', 'ipv6Address']);
    const addr = (key: string, family: 4 | 6): string | undefined => {
      const text = optString(b, key, bat);
      if (text === undefined || text === '') return undefined;
      const c = parseCidrOrIP(text);
      if (!c || c.family !== family)
        throw bat.child(key).error(`${JSON.stringify(text)} is not an IPv${family} address/prefix`);
      // The address is kept as written, with its prefix (a bare address gets a full-length one).
      return formatCidrAsWritten(c);
    };
    const ipv4Address = addr('ipv4Address', 4);
    const ipv6Address = addr('ipv6Address', 6);
    if (!ipv4Address && !ipv6Address) throw bat.error('needs ipv4Address or ipv6Address');
    const asNumber = readASNumber(b, 'asNumber', bat);
    bgp = {
      ...(asNumber !== undefined ? { asNumber } : {}),
      ...(ipv4Address ? { ipv4Address } : {}),
      ...(ipv6Address ? { ipv6Address } : {}),
    };
  }
  const orchRefs = (optList(spec, 'orchRefs', sat) ?? []).map((r, i) => {
    const rat = sat.child('orchRefs').child(i);
    const ro = readObj(r, rat, ['nodeName', 'orchestrator'], false);
    const nodeName = optString(ro, 'nodeName', rat);
    return { ...(nodeName ? { nodeName } : {}), orchestrator: reqString(ro, 'orchestrator', rat) };
  });

  const v3Name = convertNodeName(name);
  if (!v3Name)
    throw mat.child('name').error(`${JSON.stringify(name)} has no characters usable in a v3 node name`);
  const node: Node = {
    apiVersion: API_V3,
    kind: 'Node',
    metadata: { name: v3Name },
    spec: { ...(bgp ? { bgp } : {}), ...(orchRefs.length ? { orchRefs } : {}) },
  };
  return { resource: node, from: name, notes: renamedNote('node name', name, v3Name) };
}
