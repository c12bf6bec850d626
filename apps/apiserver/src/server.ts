/**
 * `startApiServer`: calico-apiserver's process wiring (the I/O edge).
 *
 *   env / --kubeconfig ──► ClientConfig ──► Datastore (Kubernetes CRDs, or etcd) + IPAM
 *                      └─► Kubernetes connection ──► KubeReviews (ConfigMap, TokenReview, SAR)
 *   --tls-cert-file/--tls-private-key-file + the ConfigMap's CAs ──► node:https, requestCert
 *        ──► createRequestHandler (health, authentication, authorization, discovery, verbs)
 *
 * Every `refreshMs` (30 s) the serving certificate files and the authentication ConfigMap are read
 * again and, when they changed, the TLS context is replaced (new connections use it); until the
 * ConfigMap has been read once it is tried every 2 s, no client can authenticate and /readyz says
 * so. /readyz also needs the datastore to answer (a list of ClusterInformation, at most every 2 s).
 *
 * A client certificate is asked for and never required (health probes present none); one that does
 * not verify against the trusted CAs is ignored, and the request falls back to a bearer token.
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { type Logger, NOOP_LOGGER } from '@calico-ts/api/log';
import type { NodeIpam, PoolDeletion } from '@calico-ts/ctl';
import {
  configFromEnv,
  createKVStore,
  type Datastore,
  type Env,
  KVDatastore,
  type KVStore,
  mergeClientConfig,
} from '@calico-ts/datastore';
import { KubeHttp, loadKubeConnection } from '@calico-ts/datastore/kube';
import { IpamClient, IpamStore } from '@calico-ts/ipam';
import { authenticate, type TokenReviewer, type User } from './auth/authenticator.js';
import { type AuthenticationConfig, authenticationConfigFrom, trustedCaPems } from './auth/authn-config.js';
import { type AccessReviewer, Authorizer } from './auth/authorizer.js';
import { KubeReviews } from './auth/kube-reviews.js';
import { createRequestHandler } from './handler.js';
import { servedResources } from './resources.js';
import { ResourceStore } from './storage.js';

export const VERSION = 'v0.1.0';

/** What authentication and authorization ask of kube-apiserver (`KubeReviews`). */
export interface Delegation {
  authenticationData(): Promise<Record<string, string>>;
  readonly reviewToken: TokenReviewer;
  readonly reviewAccess: AccessReviewer;
}

export interface ApiServerOptions {
  /** `--secure-port`; 0 picks a free one. */
  readonly securePort: number;
  /** `--bind-address`; default 0.0.0.0. */
  readonly bindAddress?: string;
  readonly tlsCertFile: string;
  readonly tlsKeyFile: string;
  /** `--kubeconfig`; else KUBECONFIG, else the in-cluster service account. */
  readonly kubeconfig?: string;
  /** DATASTORE_TYPE, ETCD_*, KUBECONFIG, K8S_*; default process.env. */
  readonly env?: Env;
  readonly log?: Logger;
  /** How often certificates and the authentication ConfigMap are re-read; default 30 s. */
  readonly refreshMs?: number;
  /** A datastore to serve instead of the one the environment names (tests); not closed. */
  readonly datastore?: Datastore;
  /** Delegation to use instead of kube-apiserver's (tests). */
  readonly delegation?: Delegation;
}

export interface RunningApiServer {
  readonly port: number;
  /** Stop listening, end every connection (watches too), close what was opened. */
  close(): Promise<void>;
}

interface Backing {
  datastore: Datastore;
  delegation: Delegation;
  pools?: PoolDeletion;
  nodeIpam?: NodeIpam;
  close(): Promise<void>;
}

async function openBacking(opts: ApiServerOptions, log: Logger): Promise<Backing> {
  const env = opts.env ?? process.env;
  const closers: (() => Promise<void> | void)[] = [];
  const close = async () => {
    for (const c of closers.reverse()) await c();
  };
  try {
    const fromEnv = configFromEnv(env).config;
    const { config } = mergeClientConfig(undefined, {
      ...fromEnv,
      ...(opts.kubeconfig ? { kubeconfig: opts.kubeconfig } : {}),
    });
    let delegation = opts.delegation;
    if (!delegation) {
      const http = new KubeHttp(
        await loadKubeConnection({ ...config, datastoreType: 'kubernetes' }, env as NodeJS.ProcessEnv),
      );
      closers.push(() => http.close());
      delegation = new KubeReviews(http);
    }
    if (opts.datastore) return { datastore: opts.datastore, delegation, close };
    const kv: KVStore = await createKVStore(config);
    closers.push(() => kv.close());
    const datastore = new KVDatastore(kv, { backend: config.datastoreType });
    const ipam = new IpamClient(datastore, new IpamStore(kv));
    log.info({ datastoreType: config.datastoreType }, 'datastore opened');
    return {
      datastore,
      delegation,
      pools: {
        releasePoolAffinities: (cidr) => ipam.releasePoolAffinities(cidr),
        sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
      },
      nodeIpam: ipam,
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}

/** The client's certificate chain, leaf first, when TLS verified it against the trusted CAs. */
function verifiedChain(req: IncomingMessage): X509Certificate[] | undefined {
  const socket = req.socket as TLSSocket;
  if (!socket.authorized) return undefined;
  const out: X509Certificate[] = [];
  let cert = socket.getPeerCertificate(true);
  while (cert?.raw && out.length < 10) {
    out.push(new X509Certificate(cert.raw));
    const next = cert.issuerCertificate;
    if (!next || next === cert || next.fingerprint256 === cert.fingerprint256) break;
    cert = next;
  }
  return out.length > 0 ? out : undefined;
}

function distinctHeaders(req: IncomingMessage): Record<string, string[] | undefined> {
  return req.headersDistinct;
}

/** Start calico-apiserver; resolves once it listens. */
export async function startApiServer(opts: ApiServerOptions): Promise<RunningApiServer> {
  const log = opts.log ?? NOOP_LOGGER;
  const refreshMs = opts.refreshMs ?? 30_000;
  const readTls = async () => ({
    cert: await readFile(opts.tlsCertFile),
    key: await readFile(opts.tlsKeyFile),
  });
  let tls = await readTls();
  const backing = await openBacking(opts, log);
  const { datastore, delegation } = backing;
  let auth: AuthenticationConfig | undefined;
  let authError =
    'the authentication configuration (kube-system/extension-apiserver-authentication) is not read yet';
  const resources = servedResources(datastore.backend);
  const authorizer = new Authorizer(delegation.reviewAccess);
  const store = new ResourceStore({
    datastore,
    log,
    ...(backing.pools ? { pools: backing.pools } : {}),
    ...(backing.nodeIpam ? { nodeIpam: backing.nodeIpam } : {}),
  });
  let datastoreCheck: { at: number; error: string | undefined } | undefined;
  const notReady = async (): Promise<string | undefined> => {
    if (!auth) return authError;
    if (!datastoreCheck || Date.now() - datastoreCheck.at > 2000) {
      const error = await Promise.race([
        datastore.list('ClusterInformation').then(
          () => undefined,
          (e: unknown) => `the datastore does not answer: ${(e as Error).message}`,
        ),
        new Promise<string>((r) =>
          setTimeout(() => r('the datastore does not answer within 5 s'), 5000).unref(),
        ),
      ]);
      datastoreCheck = { at: Date.now(), error };
    }
    return datastoreCheck.error;
  };
  const handler = createRequestHandler({
    resources,
    resourceDeps: { store, datastore, log },
    authenticate: async (req): Promise<User | undefined> => {
      if (!auth) return undefined;
      const chain = verifiedChain(req);
      return authenticate(
        { ...(chain ? { chain } : {}), headers: distinctHeaders(req) },
        auth,
        delegation.reviewToken,
      );
    },
    authorize: (user, a) => authorizer.authorize(user, a),
    notReady,
    log,
    version: VERSION,
  });
  const secureContext = () => ({
    ...tls,
    ...(auth ? { ca: trustedCaPems(auth) } : {}),
  });
  const server: Server = createServer(
    { ...secureContext(), requestCert: true, rejectUnauthorized: false, minVersion: 'TLSv1.2' },
    handler,
  );
  let lastAuthData = '';
  const refreshAuth = async () => {
    try {
      const data = await delegation.authenticationData();
      const text = JSON.stringify(data);
      if (text === lastAuthData) return;
      const next = authenticationConfigFrom(data);
      auth = next;
      lastAuthData = text;
      server.setSecureContext(secureContext());
      log.info(
        { clientCAs: next.clientCas.length, frontProxyCAs: next.requestHeader?.cas.length ?? 0 },
        'authentication configuration loaded',
      );
    } catch (e) {
      authError = `the authentication configuration cannot be read: ${(e as Error).message}`;
      log.warn(
        { err: (e as Error).message },
        'cannot read kube-system/extension-apiserver-authentication; trying again',
      );
    }
  };
  const refreshTls = async () => {
    try {
      const next = await readTls();
      if (next.cert.equals(tls.cert) && next.key.equals(tls.key)) return;
      tls = next;
      server.setSecureContext(secureContext());
      log.info({ cert: opts.tlsCertFile }, 'serving certificate reloaded');
    } catch (e) {
      log.warn(
        { err: (e as Error).message },
        'cannot reload the serving certificate; keeping the one in use',
      );
    }
  };
  await refreshAuth();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const tick = async () => {
    await refreshAuth();
    await refreshTls();
    if (!closed) timer = setTimeout(() => void tick(), auth ? refreshMs : 2000);
  };
  timer = setTimeout(() => void tick(), auth ? refreshMs : 2000);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.securePort, opts.bindAddress ?? '0.0.0.0', () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    closed = true;
    clearTimeout(timer);
    await backing.close();
    throw e;
  }
  const port = (server.address() as AddressInfo).port;
  log.info(
    { port, address: opts.bindAddress ?? '0.0.0.0', datastoreType: datastore.backend },
    'calico-apiserver serving',
  );
  return {
    port,
    close: async () => {
      if (closed) return;
      closed = true;
      clearTimeout(timer);
      const done = new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections();
      await done;
      await backing.close();
    },
  };
}
