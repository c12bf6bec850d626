/**
 * calicoctl.cfg parsing (pure): YAML or JSON text in, the fields it sets out.
 *
 * Two forms:
 * - v3 (`apiVersion: projectcalico.org/v3`, `kind: CalicoAPIConfig`): strict like upstream's
 *   `yaml.UnmarshalStrict` — an unknown key or a value of the wrong type is an error naming it. Keys
 *   match case-insensitively, as Go's JSON decoding does.
 * - v1 (`apiVersion: v1`, `kind: calicoApiConfig`, Calico ≤ 2.x): read for migration. `etcdv2`
 *   becomes etcdv3 with a warning; `etcdScheme` + `etcdAuthority` (v1's default
 *   `http://127.0.0.1:2379`) become an endpoint when `etcdEndpoints` is not given; keys this
 *   version does not know are reported as warnings, not errors.
 */
import { LineCounter, parseDocument } from 'yaml';
import { DatastoreError } from '../errors.js';
import {
  CLIENT_CONFIG_FIELDS,
  type ClientConfig,
  type ClientConfigField,
  type DatastoreType,
  normalizeDatastoreType,
  splitEndpoints,
} from './client-config.js';
import { parsePlainMapping } from './plain-yaml.js';

type FieldType = 'string' | 'boolean' | 'number';

const FIELD_TYPES: Record<ClientConfigField, FieldType> = {
  datastoreType: 'string',
  etcdEndpoints: 'string',
  etcdDiscoverySrv: 'string',
  etcdUsername: 'string',
  etcdPassword: 'string',
  etcdKeyFile: 'string',
  etcdCertFile: 'string',
  etcdCACertFile: 'string',
  etcdKey: 'string',
  etcdCert: 'string',
  etcdCACert: 'string',
  kubeconfig: 'string',
  k8sAPIEndpoint: 'string',
  k8sKeyFile: 'string',
  k8sCertFile: 'string',
  k8sCAFile: 'string',
  k8sInsecureSkipTLSVerify: 'boolean',
  k8sAPIToken: 'string',
  k8sDisableNodePoll: 'boolean',
  k8sUsePodCIDR: 'boolean',
  kubeconfigInline: 'string',
  k8sClientQPS: 'number',
  k8sCurrentContext: 'string',
  calicoAPIGroup: 'string',
};

/** v3 spec keys, lower-cased → field. */
const V3_KEYS = new Map<string, ClientConfigField>(
  (Object.keys(CLIENT_CONFIG_FIELDS) as ClientConfigField[]).map((f) => [
    CLIENT_CONFIG_FIELDS[f].file.toLowerCase(),
    f,
  ]),
);

/** v1 spec keys (libcalico-go 1.x `EtcdConfig` + `KubeConfig`), lower-cased → field. */
const V1_KEYS = new Map<string, ClientConfigField>(
  (
    [
      'datastoreType',
      'etcdEndpoints',
      'etcdUsername',
      'etcdPassword',
      'etcdKeyFile',
      'etcdCertFile',
      'etcdCACertFile',
      'kubeconfig',
      'k8sAPIEndpoint',
      'k8sKeyFile',
      'k8sCertFile',
      'k8sCAFile',
      'k8sAPIToken',
      'k8sInsecureSkipTLSVerify',
      'k8sDisableNodePoll',
    ] as const
  ).map((f) => [f.toLowerCase(), f]),
);

const TOP_LEVEL_KEYS = ['apiversion', 'kind', 'metadata', 'spec'];

export interface ParsedConfig {
  config: Partial<ClientConfig>;
  warnings: string[];
}

/**
 * Parse calicoctl.cfg text. `source` names the file in messages. Throws
 * `DatastoreError('config')`.
 */
export function parseCalicoctlConfig(text: string, source: string): ParsedConfig {
  const fail = (message: string) => new DatastoreError('config', `${source}: ${message}`);
  const root: unknown = parsePlainMapping(text) ?? parseYaml(text, fail);
  if (!isPlainObject(root)) {
    throw fail('expected a mapping with apiVersion, kind, metadata and spec');
  }
  const top = lowerKeys(root);
  for (const key of Object.keys(root)) {
    if (!TOP_LEVEL_KEYS.includes(key.toLowerCase())) {
      throw fail(`unknown field "${key}" (expected apiVersion, kind, metadata, spec)`);
    }
  }
  const apiVersion = top.get('apiversion');
  const kind = top.get('kind');
  let form: 'v3' | 'v1';
  if (apiVersion === 'projectcalico.org/v3') {
    form = 'v3';
    if (kind !== 'CalicoAPIConfig') throw fail(`expected kind "CalicoAPIConfig", got ${show(kind)}`);
  } else if (apiVersion === 'v1') {
    form = 'v1';
    if (kind !== 'calicoApiConfig')
      throw fail(`expected kind "calicoApiConfig" for apiVersion v1, got ${show(kind)}`);
  } else {
    throw fail(`unknown apiVersion ${show(apiVersion)}; expected "projectcalico.org/v3" (or the older "v1")`);
  }
  const metadata = top.get('metadata');
  if (metadata !== undefined && metadata !== null && !isPlainObject(metadata)) {
    throw fail('metadata must be a mapping');
  }
  const spec = top.get('spec') ?? {};
  if (!isPlainObject(spec)) throw fail('spec must be a mapping');

  const warnings: string[] = [];
  const config: Partial<ClientConfig> = {};
  const v1Extra: { etcdScheme?: string; etcdAuthority?: string } = {};
  const keys = form === 'v3' ? V3_KEYS : V1_KEYS;

  for (const [key, value] of Object.entries(spec)) {
    const lower = key.toLowerCase();
    if (form === 'v1' && (lower === 'etcdscheme' || lower === 'etcdauthority')) {
      if (value === null) continue;
      if (typeof value !== 'string') throw fail(`spec.${key} must be a string, not ${typeName(value)}`);
      if (lower === 'etcdscheme') v1Extra.etcdScheme = value;
      else v1Extra.etcdAuthority = value;
      continue;
    }
    const field = keys.get(lower);
    if (field === undefined) {
      if (form === 'v3') throw fail(`unknown field "spec.${key}"`);
      warnings.push(`${source}: ignoring spec.${key}, which this version does not use`);
      continue;
    }
    // `key:` with no value is null in YAML: the same as leaving it out.
    if (value === null) continue;
    const type = FIELD_TYPES[field];
    if (typeof value !== type) {
      const hint = field === 'etcdEndpoints' ? ' (a comma-separated list in one string)' : '';
      throw fail(`spec.${key} must be a ${type}${hint}, not ${typeName(value)}`);
    }
    if (type === 'string' && value === '') continue;
    setField(config, field, value as string | boolean | number, warnings, `${source}: spec.${key}`);
  }

  if (form === 'v1') {
    // v1 defaulted to etcdv2 at http://127.0.0.1:2379, built from etcdScheme + etcdAuthority.
    config.datastoreType ??= normalizeDatastoreType(
      'etcdv2',
      `${source}: spec.datastoreType (v1 default)`,
      warnings,
    ) as DatastoreType;
    if (config.datastoreType === 'etcdv3' && config.etcdEndpoints === undefined) {
      const scheme = v1Extra.etcdScheme || 'http';
      const authority = v1Extra.etcdAuthority || '127.0.0.1:2379';
      config.etcdEndpoints = [`${scheme}://${authority}`];
    } else if (
      config.etcdEndpoints !== undefined &&
      (v1Extra.etcdAuthority !== undefined || v1Extra.etcdScheme !== undefined)
    ) {
      warnings.push(
        `${source}: spec.etcdScheme and spec.etcdAuthority are ignored when spec.etcdEndpoints is set`,
      );
    }
  }
  return { config, warnings };
}

/** Any YAML or JSON document, with the YAML library; its first error, with a line, is thrown. */
function parseYaml(text: string, fail: (message: string) => DatastoreError): unknown {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false, lineCounter });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const line = lineCounter.linePos(e.pos[0]).line;
    throw fail(`not valid YAML or JSON${line ? ` (line ${line})` : ''}: ${e.message.split('\n')[0]}`);
  }
  return doc.toJS();
}

function setField(
  config: Partial<ClientConfig>,
  field: ClientConfigField,
  value: string | boolean | number,
  warnings: string[],
  label: string,
): void {
  const c = config as Record<string, unknown>;
  if (field === 'etcdEndpoints') c[field] = splitEndpoints(value as string);
  else if (field === 'datastoreType') c[field] = normalizeDatastoreType(value as string, label, warnings);
  else c[field] = value;
}

function lowerKeys(obj: Record<string, unknown>): Map<string, unknown> {
  return new Map(Object.entries(obj).map(([k, v]) => [k.toLowerCase(), v]));
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  return `${typeof v} ${JSON.stringify(v)}`;
}

function show(v: unknown): string {
  return v === undefined ? 'nothing' : JSON.stringify(v);
}
