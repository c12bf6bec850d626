/**
 * The v1 kinds of the cluster's network: `ipPool` → IPPool (named after its CIDR, v1's IPIP
 * settings as ipipMode, v3's defaults for what v1 had not) and `bgpPeer` → BGPPeer (global or
 * per-node scope, named after the peer IP).
 */
import { formatIP } from '../../net/cidr.js';
import type { BGPPeer, IPPool } from '../../resources/index.js';
import { type FieldPath, type Obj, optBool, optString, readObj, reqString } from '../fields.js';
import { cidrToName, convertNodeName, formatCidrAsWritten, ipToName } from '../names.js';
import { API_V3, type Converted } from './converted.js';
import { readASNumber, readCidr, readIP } from './readers.js';

// ipPool → IPPool

export function convertIPPool(doc: Obj, at: FieldPath): Converted {
  const mat = at.child('metadata');
  const md = readObj(doc.metadata, mat, ['cidr'], false);
  const cidr = readCidr(md, 'cidr', mat);
  const sat = at.child('spec');
  const spec = readObj(doc.spec, sat, ['ipip', 'nat-outgoing', 'disabled', 'assignmentMode']);

  let ipipMode: 'Never' | 'Always' | 'CrossSubnet' = 'Never';
  if (spec.ipip !== undefined && spec.ipip !== null) {
    const iat = sat.child('ipip');
    const ipip = readObj(spec.ipip, iat, ['enabled', 'mode']);
    const mode = (optString(ipip, 'mode', iat) ?? '').toLowerCase();
    if (mode !== '' && mode !== 'always' && mode !== 'cross-subnet') {
      throw iat.child('mode').error(`must be always or cross-subnet, got ${JSON.stringify(ipip.mode)}`);
    }
    if (optBool(ipip, 'enabled', iat)) ipipMode = mode === 'cross-subnet' ? 'CrossSubnet' : 'Always';
  }
  const assignmentMode = optString(spec, 'assignmentMode', sat) ?? 'Automatic';
  if (assignmentMode !== 'Automatic' && assignmentMode !== 'Manual') {
    throw sat
      .child('assignmentMode')
      .error(`must be Automatic or Manual, got ${JSON.stringify(assignmentMode)}`);
  }

  const pool: IPPool = {
    apiVersion: API_V3,
    kind: 'IPPool',
    metadata: { name: cidrToName(cidr) },
    spec: {
      cidr: formatCidrAsWritten(cidr),
      vxlanMode: 'Never',
      ipipMode,
      ...(optBool(spec, 'nat-outgoing', sat) ? { natOutgoing: true } : {}),
      ...(optBool(spec, 'disabled', sat) ? { disabled: true } : {}),
      blockSize: cidr.family === 4 ? 26 : 122,
      nodeSelector: 'all()',
      allowedUses: ['Workload', 'Tunnel'],
      assignmentMode,
    },
  };
  return { resource: pool, from: formatCidrAsWritten(cidr), notes: [] };
}

// bgpPeer → BGPPeer

export function convertBGPPeer(doc: Obj, at: FieldPath): Converted {
  const mat = at.child('metadata');
  const md = readObj(doc.metadata, mat, ['scope', 'node', 'peerIP'], false);
  const scope = reqString(md, 'scope', mat).toLowerCase();
  const nodeIn = optString(md, 'node', mat) ?? '';
  if (md.peerIP === undefined || md.peerIP === null || md.peerIP === '')
    throw mat.child('peerIP').error('is required');
  const peerIP = readIP(md.peerIP, mat.child('peerIP'));
  const sat = at.child('spec');
  const spec = readObj(doc.spec, sat, ['asNumber']);
  const asNumber = readASNumber(spec, 'asNumber', sat);

  let name: string;
  let node: string | undefined;
  if (scope === 'global') {
    if (nodeIn) throw mat.child('node').error('must not be set for a global-scope peer');
    name = ipToName(peerIP);
  } else if (scope === 'node') {
    if (!nodeIn) throw mat.child('node').error('is required for a node-scope peer');
    node = convertNodeName(nodeIn);
    name = `${node}.${ipToName(peerIP)}`;
  } else {
    throw mat.child('scope').error(`must be global or node, got ${JSON.stringify(md.scope)}`);
  }
  const peer: BGPPeer = {
    apiVersion: API_V3,
    kind: 'BGPPeer',
    metadata: { name },
    spec: {
      ...(node ? { node } : {}),
      peerIP: formatIP(peerIP),
      ...(asNumber ? { asNumber } : {}),
    },
  };
  return { resource: peer, from: node ? `${nodeIn}/${formatIP(peerIP)}` : formatIP(peerIP), notes: [] };
}
