/**
 * The plugin's token (I/O): a TokenRequest for the CNI service account (`calico-cni-plugin` in the
 * pod's namespace), made with the pod's own mounted token, as upstream does; when the API server
 * answers 404 (that service account does not exist, as in manifests older than it) the pod's own
 * token is used instead, with a warning.
 */
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { InstallError } from './errors.js';

export interface ServiceAccountFiles {
  readonly token: string;
  readonly ca?: Buffer;
  readonly namespace: string;
}

/** The mounted service account (`token`, `ca.crt`, `namespace` in `dir`). */
export async function readServiceAccount(dir: string): Promise<ServiceAccountFiles> {
  const read = async (name: string) => {
    try {
      return await readFile(`${dir}/${name}`);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new InstallError('io', `cannot read ${dir}/${name}: ${(e as Error).message}`, { cause: e });
    }
  };
  const [token, ca, namespace] = await Promise.all([read('token'), read('ca.crt'), read('namespace')]);
  if (!token || token.toString('utf8').trim() === '') {
    throw new InstallError(
      'config',
      `running in a pod (KUBERNETES_SERVICE_HOST is set) but ${dir}/token is missing or empty: mount the service account token`,
    );
  }
  return {
    token: token.toString('utf8').trim(),
    ...(ca ? { ca } : {}),
    namespace: namespace?.toString('utf8').trim() || 'kube-system',
  };
}

export interface PluginToken {
  readonly token: string;
  /** 'token-request': made for the CNI service account; 'mounted': the pod's own token. */
  readonly source: 'token-request' | 'mounted';
  readonly expiresAt?: Date;
}

export interface TokenRequestInput {
  readonly apiServer: string;
  readonly sa: ServiceAccountFiles;
  readonly serviceAccount: string;
  readonly validitySeconds: number;
  readonly skipTlsVerify: boolean;
  readonly timeoutMs?: number;
}

function post(url: URL, body: string, i: TokenRequestInput): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${i.sa.token}`,
          'Content-Type': 'application/json',
          Accept: 'application/json',
          'Content-Length': Buffer.byteLength(body),
        },
        ...(i.sa.ca ? { ca: i.sa.ca } : {}),
        rejectUnauthorized: !i.skipTlsVerify,
        timeout: i.timeoutMs ?? 15_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer in ${(i.timeoutMs ?? 15_000) / 1000} s`)));
    req.on('error', reject);
    req.end(body);
  });
}

export async function requestPluginToken(
  i: TokenRequestInput,
  warn: (msg: string) => void,
): Promise<PluginToken> {
  const path = `/api/v1/namespaces/${encodeURIComponent(i.sa.namespace)}/serviceaccounts/${encodeURIComponent(i.serviceAccount)}/token`;
  const body = JSON.stringify({
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: i.validitySeconds },
  });
  let res: { status: number; text: string };
  try {
    res = await post(new URL(i.apiServer + path), body, i);
  } catch (e) {
    throw new InstallError(
      'kubernetes',
      `cannot reach the API server ${i.apiServer} for the CNI plugin's token: ${(e as Error).message}`,
      {
        cause: e,
      },
    );
  }
  let parsed: { message?: string; status?: { token?: string; expirationTimestamp?: string } } | undefined;
  try {
    parsed = JSON.parse(res.text);
  } catch {
    parsed = undefined;
  }
  if (res.status === 404) {
    warn(
      `service account ${i.sa.namespace}/${i.serviceAccount} not found (${parsed?.message ?? 'HTTP 404'}); ` +
        `the CNI plugin's kubeconfig gets this pod's own token instead`,
    );
    return { token: i.sa.token, source: 'mounted' };
  }
  const token = parsed?.status?.token;
  if (res.status !== 201 && res.status !== 200) {
    throw new InstallError(
      'kubernetes',
      `the API server refused a token for service account ${i.sa.namespace}/${i.serviceAccount} ` +
        `(HTTP ${res.status}: ${parsed?.message ?? res.text.slice(0, 200)})` +
        (res.status === 403 ? '; grant this pod\'s service account "create" on serviceaccounts/token' : ''),
    );
  }
  if (!token)
    throw new InstallError('kubernetes', `the API server's TokenRequest answer has no status.token`);
  const exp = parsed?.status?.expirationTimestamp;
  return { token, source: 'token-request', ...(exp ? { expiresAt: new Date(exp) } : {}) };
}
