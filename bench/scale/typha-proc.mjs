// Typha as its own process for bench/scale: the TyphaServer over the datastore's sources on a
// free loopback port (TLS when certificate files are given). Sends {t:'listening', port} over
// IPC, answers {t:'stats'} with its counters and RSS, stops on {t:'stop'}.
//
//   node typha-proc.mjs <json config>      {etcdEndpoints, tls?: {caFile, certFile, keyFile}}
import { readFile } from 'node:fs/promises';
import { createKVStore, KVDatastore } from '@calico-ts/datastore';
import { TyphaServer, typhaSources } from '@calico-ts/typha';

const cfg = JSON.parse(process.argv[2]);
const kv = await createKVStore({ datastoreType: 'etcdv3', etcdEndpoints: cfg.etcdEndpoints });
const ds = new KVDatastore(kv, { backend: 'etcdv3' });
const server = new TyphaServer({
  sources: typhaSources(ds, kv),
  backend: 'etcdv3',
  ...(cfg.tls
    ? {
        tls: {
          ca: await readFile(cfg.tls.caFile),
          cert: await readFile(cfg.tls.certFile),
          key: await readFile(cfg.tls.keyFile),
          clientCN: 'typha-client',
        },
      }
    : {}),
});
await server.start();
process.send({ t: 'listening', port: server.port, sources: typhaSources(ds, kv).length });
process.on('message', async (m) => {
  if (m.t === 'stats') {
    globalThis.gc?.();
    process.send({ t: 'stats', ...server.stats(), inSync: server.inSync, rss: process.memoryUsage().rss });
  } else if (m.t === 'stop') {
    await server.stop();
    await ds.close();
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
