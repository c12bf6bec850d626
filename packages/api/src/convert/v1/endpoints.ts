/**
 * The v1 endpoint kinds: `hostEndpoint` → HostEndpoint (named `<node>.<name>`) and
 * `workloadEndpoint` → WorkloadEndpoint (the v3 name built from node, orchestrator, workload and
 * endpoint as upstream's converter did; the v1 namespace label renamed).
 */
import { formatCidr, formatIP, parseCidrOrIP } from '../../net/cidr.js';
import type { HostEndpoint, WorkloadEndpoint } from '../../resources/index.js';
import { FieldPath, type Obj, optList, optString, optStringMap, readObj, reqString } from '../fields.js';
import { convertName, convertNodeName, workloadEndpointName } from '../names.js';
import { API_V3, type Converted, renamedNote } from './converted.js';
import { readEndpointPorts, readIP, readProfiles } from './readers.js';

// hostEndpoint → HostEndpoint

export function convertHostEndpoint(doc: Obj, at: FieldPath): Converted {
  const mat = at.child('metadata');
  const md = readObj(doc.metadata, mat, ['name', 'node', 'labels'], false);
  const name = reqString(md, 'name', mat);
  const nodeIn = reqString(md, 'node', mat);
  const labels = optStringMap(md, 'labels', mat);
  const sat = at.child('spec');
  const spec = readObj(doc.spec, sat, ['interfaceName', 'expectedIPs', 'profiles', 'ports']);

  const v4: string[] = [];
  const v6: string[] = [];
  (optList(spec, 'expectedIPs', sat) ?? []).forEach((v, i) => {
    const ip = readIP(v, sat.child('expectedIPs').child(i));
    (ip.family === 4 ? v4 : v6).push(formatIP(ip));
  });
  const expectedIPs = [...v4, ...v6];
  const interfaceName = optString(spec, 'interfaceName', sat);
  const profiles = readProfiles(spec, sat);
  const ports = readEndpointPorts(spec, sat);

  const node = convertNodeName(nodeIn);
  const v3Name = convertName(`${node}.${name}`);
  const hep: HostEndpoint = {
    apiVersion: API_V3,
    kind: 'HostEndpoint',
    metadata: { name: v3Name, ...(labels && Object.keys(labels).length ? { labels } : {}) },
    spec: {
      node,
      ...(interfaceName ? { interfaceName } : {}),
      ...(expectedIPs.length ? { expectedIPs } : {}),
      ...(profiles ? { profiles } : {}),
      ...(ports ? { ports } : {}),
    },
  };
  return {
    resource: hep,
    from: `${nodeIn}/${name}`,
    notes: renamedNote('host endpoint name', `${node}.${name}`, v3Name),
  };
}

// workloadEndpoint → WorkloadEndpoint

/** Go's `net.ParseMAC` forms for 6-byte addresses, printed lower-case with colons. */
function readMAC(v: string, at: FieldPath): string {
  let hex: string[] | undefined;
  if (/^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$/.test(v) && v.includes(':') !== v.includes('-')) {
    hex = v.split(/[:-]/);
  } else if (/^[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4}){2}$/.test(v)) {
    hex = v.split('.').flatMap((g) => [g.slice(0, 2), g.slice(2)]);
  }
  if (!hex) throw at.error(`${JSON.stringify(v)} is not a MAC address such as 0a:58:0a:f4:00:07`);
  return hex.map((h) => h.toLowerCase()).join(':');
}

export function convertWorkloadEndpoint(doc: Obj, at: FieldPath): Converted {
  const mat = at.child('metadata');
  const md = readObj(
    doc.metadata,
    mat,
    ['name', 'workload', 'orchestrator', 'node', 'activeInstanceID', 'labels'],
    false,
  );
  const endpointIn = reqString(md, 'name', mat);
  const workloadIn = reqString(md, 'workload', mat);
  const orchestratorIn = reqString(md, 'orchestrator', mat);
  const nodeIn = reqString(md, 'node', mat);
  const activeInstanceID = optString(md, 'activeInstanceID', mat) ?? '';
  const labelsIn = optStringMap(md, 'labels', mat) ?? {};
  const sat = at.child('spec');
  const spec = readObj(doc.spec, sat, [
    'ipNetworks',
    'ipNATs',
    'ipv4Gateway',
    'ipv6Gateway',
    'profiles',
    'interfaceName',
    'mac',
    'ports',
  ]);

  // The v1 namespace label was calico/k8s_ns.
  const labels: Record<string, string> = { ...labelsIn };
  if (Object.hasOwn(labels, 'calico/k8s_ns')) {
    labels['projectcalico.org/namespace'] = labels['calico/k8s_ns']!;
    delete labels['calico/k8s_ns'];
  }

  let namespace = 'default';
  let pod = '';
  let containerID = '';
  let workload = '';
  switch (orchestratorIn) {
    case 'k8s': {
      const dot = workloadIn.indexOf('.');
      if (dot < 0) {
        throw mat
          .child('workload')
          .error(
            `malformed k8s workload ID ${JSON.stringify(workloadIn)} (want <namespace>.<pod>): the workload was not added by the Calico CNI plugin and cannot be converted`,
          );
      }
      namespace = workloadIn.slice(0, dot);
      pod = workloadIn.slice(dot + 1);
      containerID = activeInstanceID;
      break;
    }
    case 'cni':
      containerID = workloadIn;
      break;
    case 'libnetwork':
      workload = 'libnetwork';
      break;
    default:
      workload = convertName(workloadIn);
  }

  const nets4: string[] = [];
  const nets6: string[] = [];
  (optList(spec, 'ipNetworks', sat) ?? []).forEach((v, i) => {
    const nat = sat.child('ipNetworks').child(i);
    if (typeof v !== 'string') throw nat.error(`must be a CIDR string, got ${JSON.stringify(v)}`);
    const c = parseCidrOrIP(v);
    if (!c) throw nat.error(`${JSON.stringify(v)} is not a CIDR`);
    (c.family === 4 ? nets4 : nets6).push(formatCidr(c));
  });
  const nat4: { internalIP: string; externalIP: string }[] = [];
  const nat6: { internalIP: string; externalIP: string }[] = [];
  (optList(spec, 'ipNATs', sat) ?? []).forEach((v, i) => {
    const nat = sat.child('ipNATs').child(i);
    const n = readObj(v, nat, ['internalIP', 'externalIP'], false);
    const internal = readIP(n.internalIP, nat.child('internalIP'));
    const external = readIP(n.externalIP, nat.child('externalIP'));
    (internal.family === 4 ? nat4 : nat6).push({
      internalIP: formatIP(internal),
      externalIP: formatIP(external),
    });
  });
  const gw = (key: string): string | undefined => {
    const text = optString(spec, key, sat);
    return text === undefined ? undefined : formatIP(readIP(text, sat.child(key)));
  };
  const ipv4Gateway = gw('ipv4Gateway');
  const ipv6Gateway = gw('ipv6Gateway');
  const macText = optString(spec, 'mac', sat);
  const mac = macText === undefined ? undefined : readMAC(macText, sat.child('mac'));
  const interfaceName = optString(spec, 'interfaceName', sat);
  const profiles = readProfiles(spec, sat);
  const ports = readEndpointPorts(spec, sat);

  const orchestrator = convertName(orchestratorIn);
  const node = convertNodeName(nodeIn);
  const endpoint = convertName(endpointIn);
  const named = workloadEndpointName({ node, orchestrator, endpoint, workload, pod, containerID });
  if ('field' in named) {
    const source: Record<string, string> = {
      node: 'metadata.node',
      orchestrator: 'metadata.orchestrator',
      endpoint: 'metadata.name',
      pod: 'metadata.workload',
      containerID: orchestratorIn === 'cni' ? 'metadata.workload' : 'metadata.activeInstanceID',
      workload: 'metadata.workload',
    };
    throw new FieldPath(at.doc, at.path ? `${at.path}.${source[named.field]}` : source[named.field]!).error(
      `the v3 ${named.field} ${named.reason} to form the WorkloadEndpoint name`,
    );
  }
  const ipNetworks = [...nets4, ...nets6];
  const ipNATs = [...nat4, ...nat6];
  const wep: WorkloadEndpoint = {
    apiVersion: API_V3,
    kind: 'WorkloadEndpoint',
    metadata: { name: named.name, namespace, ...(Object.keys(labels).length ? { labels } : {}) },
    spec: {
      orchestrator,
      ...(workload ? { workload } : {}),
      node,
      ...(containerID ? { containerID } : {}),
      ...(pod ? { pod } : {}),
      endpoint,
      ...(ipNetworks.length ? { ipNetworks } : {}),
      ...(ipNATs.length ? { ipNATs } : {}),
      ...(ipv4Gateway ? { ipv4Gateway } : {}),
      ...(ipv6Gateway ? { ipv6Gateway } : {}),
      ...(profiles ? { profiles } : {}),
      ...(interfaceName ? { interfaceName } : {}),
      ...(mac ? { mac } : {}),
      ...(ports ? { ports } : {}),
    },
  };
  return { resource: wep, from: `${nodeIn}/${orchestratorIn}/${workloadIn}/${endpointIn}`, notes: [] };
}
