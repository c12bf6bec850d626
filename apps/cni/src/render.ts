/**
 * The files install-cni writes, as text (pure): the network config from its template and the
 * plugin's kubeconfig.
 */
import { InstallError } from './errors.js';

/** Used when neither `CNI_NETWORK_CONFIG` nor `CNI_NETWORK_CONFIG_FILE` is set. */
export const DEFAULT_NETWORK_CONFIG = `{
  "name": "k8s-pod-network",
  "cniVersion": "0.3.1",
  "plugins": [
    {
      "type": "calico",
      "log_level": "__LOG_LEVEL__",
      "log_file_path": "__LOG_FILE_PATH__",
      "datastore_type": "__DATASTORE_TYPE__",
      "nodename": "__KUBERNETES_NODE_NAME__",
      "mtu": __CNI_MTU__,
      "ipam": { "type": "calico-ipam" },
      "policy": { "type": "k8s" },
      "kubernetes": { "kubeconfig": "__KUBECONFIG_FILEPATH__" }
    },
    {
      "type": "portmap",
      "snat": true,
      "capabilities": { "portMappings": true }
    }
  ]
}
`;

export interface RenderedNetworkConfig {
  /** The config, pretty-printed JSON. */
  readonly text: string;
  /** A conflist (`plugins`), not a single plugin's config. */
  readonly isList: boolean;
  /** `__NAME__` words left in it that are no placeholder we know (likely typos). */
  readonly unknownPlaceholders: readonly string[];
}

/** Where in `text` the JSON parser stopped, as `line L column C`, when its message says. */
function position(text: string, message: string): string {
  const m = /position (\d+)/.exec(message);
  if (!m) return '';
  const before = text.slice(0, Number(m[1]));
  const line = before.split('\n').length;
  return ` (line ${line}, column ${before.length - before.lastIndexOf('\n')})`;
}

/**
 * Substitutes every placeholder and checks the result is one JSON object with a `type` or a
 * `plugins` list, as the container runtime will need it.
 */
export function renderNetworkConfig(
  template: string,
  values: Readonly<Record<string, string>>,
  source: string,
): RenderedNetworkConfig {
  let text = template;
  for (const [placeholder, value] of Object.entries(values)) text = text.split(placeholder).join(value);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    const msg = (e as Error).message;
    throw new InstallError(
      'config',
      `${source} is not valid JSON after substitution${position(text, msg)}: ${msg}`,
      { cause: e },
    );
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new InstallError('config', `${source} must be a JSON object, got ${JSON.stringify(parsed)}`);
  }
  const conf = parsed as Record<string, unknown>;
  if (!Array.isArray(conf.plugins) && typeof conf.type !== 'string') {
    throw new InstallError(
      'config',
      `${source} has neither "plugins" (a conflist) nor "type" (a single plugin)`,
    );
  }
  const unknownPlaceholders = [...new Set(text.match(/__[A-Z][A-Z0-9_]*__/g) ?? [])];
  return {
    text: `${JSON.stringify(conf, null, 2)}\n`,
    isList: Array.isArray(conf.plugins),
    unknownPlaceholders,
  };
}

export interface KubeconfigInput {
  /** `https://host:port`. */
  readonly server: string;
  readonly token: string;
  /** The CA certificate (PEM); omitted with skipTlsVerify. */
  readonly ca?: Buffer;
  readonly skipTlsVerify: boolean;
}

/** The kubeconfig the plugin reads (`<net.d>/calico-kubeconfig`). */
export function renderKubeconfig(i: KubeconfigInput): string {
  const q = (s: string) => JSON.stringify(s);
  const trust = i.skipTlsVerify
    ? '    insecure-skip-tls-verify: true'
    : i.ca
      ? `    certificate-authority-data: ${q(i.ca.toString('base64'))}`
      : '';
  return [
    '# Kubeconfig file for the Calico CNI plugin, written by install-cni.',
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: local',
    '  cluster:',
    `    server: ${q(i.server)}`,
    ...(trust ? [trust] : []),
    'users:',
    '- name: calico',
    '  user:',
    `    token: ${q(i.token)}`,
    'contexts:',
    '- name: calico-context',
    '  context:',
    '    cluster: local',
    '    user: calico',
    'current-context: calico-context',
    '',
  ].join('\n');
}
