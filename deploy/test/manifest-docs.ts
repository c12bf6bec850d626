/**
 * The checked-in manifests as objects, and what the tests look up in them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { deployDir } from '../scripts/helm.mjs';

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [field: string]: unknown;
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    configMapKeyRef?: { name: string; key: string };
    fieldRef?: { fieldPath: string };
  };
}

export interface Container {
  name: string;
  image: string;
  command?: string[];
  env?: EnvVar[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  livenessProbe?: { exec?: { command: string[] } };
  readinessProbe?: { exec?: { command: string[] } };
}

export interface PodSpec {
  hostNetwork?: boolean;
  serviceAccountName?: string;
  priorityClassName?: string;
  tolerations?: Record<string, string>[];
  initContainers?: Container[];
  containers: Container[];
  volumes?: {
    name: string;
    hostPath?: { path: string; type?: string };
    secret?: { secretName: string };
  }[];
}

export function manifestPath(file: string): string {
  return join(deployDir, 'manifests', file);
}

export function parseObjects(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((d) => {
      if (d.errors.length > 0) throw new Error(d.errors.map((e) => e.message).join('; '));
      return d.toJS() as KubeObject | null;
    })
    .filter((o): o is KubeObject => o !== null);
}

export function readManifest(file: string): KubeObject[] {
  return parseObjects(readFileSync(manifestPath(file), 'utf8'));
}

export function find(objects: readonly KubeObject[], kind: string, name: string): KubeObject {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`no ${kind} ${name}`);
  return o;
}

export function podSpec(workload: KubeObject): PodSpec {
  return (workload.spec as { template: { spec: PodSpec } }).template.spec;
}

/**
 * A container's environment as the kubelet would give it: literal values, ConfigMap keys from the
 * manifest's ConfigMaps, `spec.nodeName` as `nodeName`, `metadata.namespace` as the namespace the
 * manifests install into (kube-system).
 */
export function resolveEnv(
  objects: readonly KubeObject[],
  container: Container,
  nodeName: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of container.env ?? []) {
    if (e.value !== undefined) out[e.name] = e.value;
    else if (e.valueFrom?.configMapKeyRef) {
      const ref = e.valueFrom.configMapKeyRef;
      const data = (find(objects, 'ConfigMap', ref.name).data ?? {}) as Record<string, string>;
      if (!(ref.key in data)) throw new Error(`${e.name}: ConfigMap ${ref.name} has no key ${ref.key}`);
      out[e.name] = data[ref.key]!;
    } else if (e.valueFrom?.fieldRef?.fieldPath === 'spec.nodeName') out[e.name] = nodeName;
    else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace') out[e.name] = 'kube-system';
    else throw new Error(`${e.name}: a value the test does not resolve`);
  }
  return out;
}
