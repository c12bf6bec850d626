/**
 * calico-apiserver's command line, upstream's flag names (pure):
 *
 *   calico-apiserver --secure-port=5443 --tls-cert-file=FILE --tls-private-key-file=FILE
 *                    [--bind-address=0.0.0.0] [--kubeconfig=FILE] [-v=N]
 *   calico-apiserver --version | --help
 *
 * `--flag=value` and `--flag value` (and a single dash) are read alike. `-v`/`--v` (klog
 * verbosity) is accepted and ignored: LOG_LEVEL sets the level. Any other flag is refused, named.
 */

export interface Flags {
  readonly securePort: number;
  readonly bindAddress: string;
  readonly tlsCertFile: string;
  readonly tlsKeyFile: string;
  readonly kubeconfig?: string;
}

export type ParsedArgs =
  | { readonly kind: 'run'; readonly flags: Flags }
  | { readonly kind: 'version' }
  | { readonly kind: 'help' };

export const USAGE = `Usage: calico-apiserver --secure-port=PORT --tls-cert-file=FILE --tls-private-key-file=FILE [options]

Serves projectcalico.org/v3 over HTTPS for the Kubernetes aggregation layer.

Options:
  --secure-port=PORT            port to serve HTTPS on (default 5443)
  --bind-address=ADDRESS        address to listen on (default 0.0.0.0)
  --tls-cert-file=FILE          serving certificate (PEM), re-read when it changes
  --tls-private-key-file=FILE   its private key (PEM)
  --kubeconfig=FILE             Kubernetes API for delegated authentication and authorization
                                (and the Kubernetes datastore); default KUBECONFIG, else in-cluster
  -v=N                          accepted and ignored (use LOG_LEVEL)
  --version                     print the version
  --help                        this text

Environment: DATASTORE_TYPE (kubernetes, or etcdv3 with ETCD_ENDPOINTS, ETCD_*_FILE),
KUBECONFIG, LOG_LEVEL (debug, info, warn, error; default info).
`;

const VALUED = new Set([
  'secure-port',
  'bind-address',
  'tls-cert-file',
  'tls-private-key-file',
  'kubeconfig',
  'v',
]);

/** The parsed command line; throws an Error naming the flag that is wrong. */
export function parseArgs(argv: readonly string[]): ParsedArgs {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const m = /^--?([a-z][a-z0-9-]*)(?:=(.*))?$/.exec(arg);
    if (!m) throw new Error(`unexpected argument ${JSON.stringify(arg)}`);
    const name = m[1]!;
    if (name === 'version') return { kind: 'version' };
    if (name === 'help' || name === 'h') return { kind: 'help' };
    if (!VALUED.has(name)) throw new Error(`unknown flag --${name}`);
    let value = m[2];
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) throw new Error(`--${name} needs a value`);
    }
    values.set(name, value);
  }
  const portText = values.get('secure-port') ?? '5443';
  if (!/^\d+$/.test(portText) || Number(portText) > 65535) {
    throw new Error(`--secure-port must be a port number (0-65535), got ${JSON.stringify(portText)}`);
  }
  const tlsCertFile = values.get('tls-cert-file');
  const tlsKeyFile = values.get('tls-private-key-file');
  if (!tlsCertFile) throw new Error('--tls-cert-file is required (the serving certificate)');
  if (!tlsKeyFile) throw new Error('--tls-private-key-file is required (the serving key)');
  const kubeconfig = values.get('kubeconfig');
  return {
    kind: 'run',
    flags: {
      securePort: Number(portText),
      bindAddress: values.get('bind-address') ?? '0.0.0.0',
      tlsCertFile,
      tlsKeyFile,
      ...(kubeconfig ? { kubeconfig } : {}),
    },
  };
}
