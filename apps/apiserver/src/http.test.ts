/**
 * calico-apiserver over real HTTPS on loopback, as a client sees it: certificates made with
 * openssl, an in-memory datastore, and kube-apiserver's side (the authentication ConfigMap,
 * TokenReview, SubjectAccessReview) answered by a recording fake. What the aggregator and kubectl
 * do against a real kube-apiserver is in apiserver.int.test.ts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NOOP_LOGGER } from '@calico-ts/api/log';
import { KVDatastore, MemoryKVStore } from '@calico-ts/datastore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccessReviewSpec } from './auth/authorizer.js';
import { type RunningApiServer, startApiServer } from './server.js';
import { issue, makeCa, type Pem } from './testing-internal/certs.js';
import { type Client, client, type Identity } from './testing-internal/client.js';

const V3 = '/apis/projectcalico.org/v3';

const gnp = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'GlobalNetworkPolicy',
  metadata: { name, ...extra },
  spec: { selector: "app == 'web'", ingress: [{ action: 'Allow' }] },
});

describe('calico-apiserver over HTTPS', () => {
  let dir: string;
  let server: RunningApiServer;
  let c: Client;
  let datastore: KVDatastore;
  const reviews: AccessReviewSpec[] = [];
  let proxy: Pem;
  let otherProxy: Pem;
  let alice: Pem;
  let rogue: Pem;
  let admin: Identity;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'calico-apiserver-test-'));
    const [servingCa, clientCa, frontProxyCa, rogueCa] = await Promise.all(
      ['serving-ca', 'client-ca', 'front-proxy-ca', 'rogue-ca'].map((n) => makeCa(dir, n)),
    );
    const serving = await issue(dir, servingCa!, 'serving', {
      subject: '/CN=calico-api',
      serverNames: ['DNS:localhost', 'IP:127.0.0.1'],
    });
    [proxy, otherProxy, alice, rogue] = await Promise.all([
      issue(dir, frontProxyCa!, 'proxy', { subject: '/CN=front-proxy-client' }),
      issue(dir, frontProxyCa!, 'other-proxy', { subject: '/CN=someone-else' }),
      issue(dir, clientCa!, 'alice', { subject: '/O=devs/O=ops/CN=alice' }),
      issue(dir, rogueCa!, 'rogue', { subject: '/CN=front-proxy-client' }),
    ]);
    admin = {
      cert: proxy.cert,
      key: proxy.key,
      headers: { 'X-Remote-User': 'admin', 'X-Remote-Group': 'system:masters' },
    };
    datastore = new KVDatastore(new MemoryKVStore(), { backend: 'memory' });
    server = await startApiServer({
      securePort: 0,
      bindAddress: '127.0.0.1',
      tlsCertFile: serving.certFile,
      tlsKeyFile: serving.keyFile,
      datastore,
      log: NOOP_LOGGER,
      delegation: {
        authenticationData: async () => ({
          'client-ca-file': clientCa!.cert,
          'requestheader-client-ca-file': frontProxyCa!.cert,
          'requestheader-allowed-names': '["front-proxy-client"]',
          'requestheader-username-headers': '["X-Remote-User"]',
          'requestheader-group-headers': '["X-Remote-Group"]',
          'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
        }),
        reviewToken: async (token) =>
          token === 'tok-bob' ? { name: 'bob', groups: ['readers'], extra: {} } : undefined,
        reviewAccess: async (spec) => {
          reviews.push(spec);
          const a = spec.resourceAttributes;
          if (spec.groups.includes('system:masters')) return { allowed: true };
          if (spec.user === 'bob' && a.verb === 'list' && a.resource === 'globalnetworkpolicies')
            return { allowed: true };
          return { allowed: false, reason: 'no RBAC policy matched' };
        },
      },
    });
    c = client(server.port, servingCa!.cert);
  });

  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  describe('health and authentication', () => {
    it('answers /healthz, /livez and /readyz ok to anyone, with no client certificate', async () => {
      for (const p of ['/healthz', '/livez', '/readyz']) {
        const r = await c.call('GET', p);
        expect([p, r.status, r.text]).toEqual([p, 200, 'ok']);
      }
    });

    it('refuses a request with no credentials with a 401 Status', async () => {
      const r = await c.call('GET', '/apis');
      expect(r.status).toBe(401);
      expect(r.json).toMatchObject({
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        reason: 'Unauthorized',
        code: 401,
      });
    });

    it('never believes X-Remote-User without the front-proxy certificate', async () => {
      // From an unknown CA (with the allowed CN): nobody.
      const r1 = await c.call('GET', '/apis', {
        as: { cert: rogue.cert, key: rogue.key, headers: { 'X-Remote-User': 'admin' } },
      });
      expect(r1.status).toBe(401);
      // From the front-proxy CA but a CN not allowed: nobody.
      const r2 = await c.call('GET', '/apis', {
        as: { cert: otherProxy.cert, key: otherProxy.key, headers: { 'X-Remote-User': 'admin' } },
      });
      expect(r2.status).toBe(401);
      // A client certificate of the client CA: its own CN, whatever the headers say.
      reviews.length = 0;
      const r3 = await c.call('GET', `${V3}/ippools`, {
        as: {
          cert: alice.cert,
          key: alice.key,
          headers: { 'X-Remote-User': 'admin', 'X-Remote-Group': 'system:masters' },
        },
      });
      expect(r3.status).toBe(403);
      expect(reviews.map((s) => [s.user, s.groups])).toEqual([
        ['alice', ['devs', 'ops', 'system:authenticated']],
      ]);
    });

    it('takes the user, groups and extra from the front proxy headers', async () => {
      reviews.length = 0;
      const r = await c.call('GET', `${V3}/tiers`, {
        as: {
          cert: proxy.cert,
          key: proxy.key,
          headers: {
            'X-Remote-User': 'carol',
            'X-Remote-Group': ['g1', 'g2'],
            'X-Remote-Extra-Scopes%2Fa': ['x', 'y'],
          },
        },
      });
      expect(r.status).toBe(403);
      expect(reviews[0]).toEqual({
        user: 'carol',
        groups: ['g1', 'g2', 'system:authenticated'],
        extra: { 'scopes/a': ['x', 'y'] },
        resourceAttributes: {
          group: 'projectcalico.org',
          version: 'v3',
          resource: 'tiers',
          subresource: '',
          verb: 'list',
          namespace: '',
          name: '',
        },
      });
    });

    it('reviews a bearer token, and words a refusal as Kubernetes does', async () => {
      const bob = { headers: { Authorization: 'Bearer tok-bob' } };
      expect((await c.call('GET', `${V3}/globalnetworkpolicies`, { as: bob })).status).toBe(200);
      const r = await c.call('GET', `${V3}/globalnetworkpolicies/x`, { as: bob });
      expect(r.status).toBe(403);
      expect(r.json).toMatchObject({
        reason: 'Forbidden',
        code: 403,
        message:
          'globalnetworkpolicies.projectcalico.org "x" is forbidden: User "bob" cannot get resource "globalnetworkpolicies" in API group "projectcalico.org" at the cluster scope: no RBAC policy matched',
        details: { name: 'x', group: 'projectcalico.org', kind: 'globalnetworkpolicies' },
      });
      expect(
        (await c.call('GET', '/apis', { as: { headers: { Authorization: 'Bearer wrong' } } })).status,
      ).toBe(401);
    });
  });

  describe('discovery and OpenAPI', () => {
    it('lists the group, and every kind with its plural, scope, verbs and upstream short names', async () => {
      expect((await c.call('GET', '/apis', { as: admin })).json).toEqual({
        kind: 'APIGroupList',
        apiVersion: 'v1',
        groups: [
          {
            name: 'projectcalico.org',
            versions: [{ groupVersion: 'projectcalico.org/v3', version: 'v3' }],
            preferredVersion: { groupVersion: 'projectcalico.org/v3', version: 'v3' },
          },
        ],
      });
      const list = (await c.call('GET', V3, { as: admin })).json;
      const byName = new Map(list.resources.map((r: { name: string }) => [r.name, r]));
      expect(list.resources).toHaveLength(21);
      expect(byName.get('globalnetworkpolicies')).toMatchObject({
        singularName: 'globalnetworkpolicy',
        namespaced: false,
        kind: 'GlobalNetworkPolicy',
        verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
        shortNames: ['gnp', 'cgnp', 'calicoglobalnetworkpolicies'],
      });
      expect(byName.get('networkpolicies')).toMatchObject({ namespaced: true, kind: 'NetworkPolicy' });
      expect(byName.get('clusterinformations')).toMatchObject({ verbs: ['get', 'list', 'watch'] });
    });

    it('answers aggregated discovery when asked for it', async () => {
      const r = await c.call('GET', '/apis', {
        as: admin,
        accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json',
      });
      expect(r.headers['content-type']).toBe(
        'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
      );
      expect(r.json.kind).toBe('APIGroupDiscoveryList');
      const resources = r.json.items[0].versions[0].resources;
      expect(resources.find((x: { resource: string }) => x.resource === 'networksets')).toMatchObject({
        responseKind: { group: 'projectcalico.org', version: 'v3', kind: 'NetworkSet' },
        scope: 'Namespaced',
        shortNames: ['netsets'],
      });
    });

    it('serves an OpenAPI v3 document with each kind, and its index names it by hash', async () => {
      const index = (await c.call('GET', '/openapi/v3', { as: admin })).json;
      const url: string = index.paths['apis/projectcalico.org/v3'].serverRelativeURL;
      expect(url).toMatch(/^\/openapi\/v3\/apis\/projectcalico\.org\/v3\?hash=[0-9A-F]{128}$/);
      const doc = await c.call('GET', url, { as: admin });
      expect(doc.headers['cache-control']).toBe('public, immutable');
      const patch = doc.json.paths['/apis/projectcalico.org/v3/ippools/{name}'].patch;
      expect(patch['x-kubernetes-group-version-kind']).toEqual({
        group: 'projectcalico.org',
        version: 'v3',
        kind: 'IPPool',
      });
      expect(patch.parameters.map((p: { name: string }) => p.name)).toContain('fieldValidation');
      const pool =
        doc.json.components.schemas['com.github.projectcalico.api.pkg.apis.projectcalico.v3.IPPool'];
      expect(pool.properties.spec.properties.cidr).toEqual({ type: 'string' });
      expect((await c.call('GET', '/openapi/v2', { as: admin })).json.swagger).toBe('2.0');
    });
  });

  describe('writes', () => {
    it('creates with Calico defaults, reads back, and refuses a second create', async () => {
      const r = await c.call('POST', `${V3}/globalnetworkpolicies`, { as: admin, body: gnp('allow-web') });
      expect(r.status).toBe(201);
      expect(r.json.spec.types).toEqual(['Ingress']);
      expect(r.json.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
      const got = await c.call('GET', `${V3}/globalnetworkpolicies/allow-web`, { as: admin });
      expect(got.json).toEqual(r.json);
      const again = await c.call('POST', `${V3}/globalnetworkpolicies`, {
        as: admin,
        body: gnp('allow-web'),
      });
      expect(again.status).toBe(409);
      expect(again.json).toMatchObject({
        reason: 'AlreadyExists',
        message: 'globalnetworkpolicies.projectcalico.org "allow-web" already exists',
      });
    });

    it('refuses an invalid object with calicoctl’s texts, and writes nothing', async () => {
      const bad = { ...gnp('bad'), spec: { selector: 'app == ', ingress: [{ action: 'Allowed' }] } };
      const r = await c.call('POST', `${V3}/globalnetworkpolicies`, { as: admin, body: bad });
      expect(r.status).toBe(422);
      expect(r.json.reason).toBe('Invalid');
      expect(r.json.message).toBe(
        'GlobalNetworkPolicy.projectcalico.org "bad" is invalid: \n' +
          '  spec.ingress[0].action: must be one of: Allow, Deny, Log, Pass\n' +
          '  spec.selector: is not a valid selector: invalid selector at column 8: expected a quoted string after "==" but found end of selector',
      );
      expect(r.json.details.causes[0]).toEqual({
        reason: 'FieldValueInvalid',
        field: 'spec.ingress[0].action',
        message: 'must be one of: Allow, Deny, Log, Pass',
      });
      await expect(datastore.get('GlobalNetworkPolicy', 'bad')).rejects.toMatchObject({ code: 'not-found' });
    });

    it('updates with a current resourceVersion and refuses a stale one', async () => {
      const cur = (await c.call('GET', `${V3}/globalnetworkpolicies/allow-web`, { as: admin })).json;
      const next = { ...cur, spec: { ...cur.spec, order: 10 } };
      const r = await c.call('PUT', `${V3}/globalnetworkpolicies/allow-web`, { as: admin, body: next });
      expect(r.status).toBe(200);
      expect(r.json.spec.order).toBe(10);
      expect(r.json.metadata.resourceVersion).not.toBe(cur.metadata.resourceVersion);
      const stale = await c.call('PUT', `${V3}/globalnetworkpolicies/allow-web`, { as: admin, body: next });
      expect(stale.status).toBe(409);
      expect(stale.json).toMatchObject({
        reason: 'Conflict',
        message:
          'Operation cannot be fulfilled on globalnetworkpolicies.projectcalico.org "allow-web": the object has been modified; please apply your changes to the latest version and try again',
      });
      const renamed = await c.call('PUT', `${V3}/globalnetworkpolicies/allow-web`, {
        as: admin,
        body: { ...next, metadata: { ...next.metadata, name: 'other' } },
      });
      expect(renamed.status).toBe(400);
    });

    it('patches: merge (a null removes a label), JSON, strategic; server-side apply is refused naming what to use', async () => {
      const path = `${V3}/globalnetworkpolicies/allow-web`;
      const merge = await c.call('PATCH', path, {
        as: admin,
        body: { metadata: { labels: { team: 'a', tmp: 'x' } } },
        contentType: 'application/merge-patch+json',
      });
      expect(merge.json.metadata.labels).toMatchObject({ team: 'a', tmp: 'x' });
      const removed = await c.call('PATCH', path, {
        as: admin,
        body: { metadata: { labels: { tmp: null } } },
        contentType: 'application/merge-patch+json',
      });
      expect(removed.json.metadata.labels.tmp).toBeUndefined();
      const json = await c.call('PATCH', path, {
        as: admin,
        body: [{ op: 'replace', path: '/spec/order', value: 20 }],
        contentType: 'application/json-patch+json',
      });
      expect(json.json.spec.order).toBe(20);
      const smp = await c.call('PATCH', path, {
        as: admin,
        body: { spec: { egress: [{ action: 'Deny' }] } },
        contentType: 'application/strategic-merge-patch+json',
      });
      expect(smp.json.spec.egress).toEqual([{ action: 'Deny' }]);
      const invalid = await c.call('PATCH', path, {
        as: admin,
        body: { spec: { order: 'first' } },
        contentType: 'application/merge-patch+json',
      });
      expect(invalid.status).toBe(422);
      expect((await datastore.get('GlobalNetworkPolicy', 'allow-web')).spec.order).toBe(20);
      const ssa = await c.call('PATCH', path, {
        as: admin,
        body: '{}',
        contentType: 'application/apply-patch+yaml',
      });
      expect(ssa.status).toBe(415);
      expect(ssa.json.reason).toBe('UnsupportedMediaType');
      expect(ssa.json.message).toMatch(
        /^server-side apply is not supported by calico-apiserver: use client-side `kubectl apply`/,
      );
    });

    it('dryRun=All checks and answers, and stores nothing', async () => {
      const r = await c.call('POST', `${V3}/globalnetworkpolicies?dryRun=All`, {
        as: admin,
        body: gnp('dry'),
      });
      expect(r.status).toBe(201);
      expect(r.json.spec.types).toEqual(['Ingress']);
      await expect(datastore.get('GlobalNetworkPolicy', 'dry')).rejects.toMatchObject({ code: 'not-found' });
    });

    it('refuses writes to read-only kinds with calicoctl’s words', async () => {
      const r = await c.call('POST', `${V3}/clusterinformations`, {
        as: admin,
        body: {
          apiVersion: 'projectcalico.org/v3',
          kind: 'ClusterInformation',
          metadata: { name: 'default' },
          spec: {},
        },
      });
      expect(r.status).toBe(405);
      expect(r.json).toMatchObject({
        reason: 'MethodNotAllowed',
        message: 'operation create or apply is not supported on ClusterInformation',
      });
    });

    it('keeps namespaced kinds in their namespace and lists them across namespaces', async () => {
      const np = (ns?: string) => ({
        apiVersion: 'projectcalico.org/v3',
        kind: 'NetworkPolicy',
        metadata: { name: 'db', ...(ns ? { namespace: ns } : {}) },
        spec: { selector: "app == 'db'" },
      });
      const created = await c.call('POST', `${V3}/namespaces/prod/networkpolicies`, {
        as: admin,
        body: np(),
      });
      expect(created.status).toBe(201);
      expect(created.json.metadata.namespace).toBe('prod');
      const mismatch = await c.call('POST', `${V3}/namespaces/prod/networkpolicies`, {
        as: admin,
        body: np('dev'),
      });
      expect(mismatch.status).toBe(400);
      expect((await c.call('POST', `${V3}/networkpolicies`, { as: admin, body: np('prod') })).status).toBe(
        405,
      );
      const all = (await c.call('GET', `${V3}/networkpolicies`, { as: admin })).json;
      expect(all.kind).toBe('NetworkPolicyList');
      expect(all.items.map((i: { metadata: { namespace: string } }) => i.metadata.namespace)).toEqual([
        'prod',
      ]);
      expect((await c.call('GET', `${V3}/namespaces/dev/networkpolicies/db`, { as: admin })).status).toBe(
        404,
      );
    });
  });

  describe('reads', () => {
    it('selects by label and field, and pages with limit and continue', async () => {
      for (const [name, color] of [
        ['p1', 'red'],
        ['p2', 'blue'],
        ['p3', 'red'],
      ]) {
        const body = gnp(name!, { labels: { color: color! } });
        expect((await c.call('POST', `${V3}/globalnetworkpolicies`, { as: admin, body })).status).toBe(201);
      }
      const names = (r: { json: { items: { metadata: { name: string } }[] } }) =>
        r.json.items.map((i) => i.metadata.name);
      const base = `${V3}/globalnetworkpolicies`;
      expect(names(await c.call('GET', `${base}?labelSelector=color%3Dred`, { as: admin }))).toEqual([
        'p1',
        'p3',
      ]);
      expect(
        names(await c.call('GET', `${base}?labelSelector=color%20notin%20(red)`, { as: admin })),
      ).toEqual(['allow-web', 'p2']);
      expect(names(await c.call('GET', `${base}?fieldSelector=metadata.name%3Dp2`, { as: admin }))).toEqual([
        'p2',
      ]);
      const bad = await c.call('GET', `${base}?fieldSelector=spec.order%3D1`, { as: admin });
      expect(bad.status).toBe(400);
      expect(bad.json.message).toMatch(/field label not supported: spec.order/);
      const first = await c.call('GET', `${base}?limit=2`, { as: admin });
      expect(names(first)).toEqual(['allow-web', 'p1']);
      expect(first.json.metadata.remainingItemCount).toBe(2);
      const second = await c.call('GET', `${base}?limit=2&continue=${first.json.metadata.continue}`, {
        as: admin,
      });
      expect(names(second)).toEqual(['p2', 'p3']);
      expect(second.json.metadata.continue).toBeUndefined();
    });

    it('answers a Table (NAME, CREATED AT) with PartialObjectMetadata rows, or the objects', async () => {
      const accept = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';
      const r = await c.call('GET', `${V3}/globalnetworkpolicies?labelSelector=color%3Dblue`, {
        as: admin,
        accept,
      });
      expect(r.headers['content-type']).toBe('application/json;as=Table;v=v1;g=meta.k8s.io');
      expect(r.json.kind).toBe('Table');
      expect(r.json.columnDefinitions.map((d: { name: string }) => d.name)).toEqual(['Name', 'Created At']);
      expect(r.json.rows).toHaveLength(1);
      expect(r.json.rows[0].cells[0]).toBe('p2');
      expect(r.json.rows[0].cells[1]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      expect(r.json.rows[0].object).toMatchObject({
        kind: 'PartialObjectMetadata',
        metadata: { name: 'p2' },
      });
      const full = await c.call('GET', `${V3}/globalnetworkpolicies/p2?includeObject=Object`, {
        as: admin,
        accept,
      });
      expect(full.json.rows[0].object.kind).toBe('GlobalNetworkPolicy');
      const none = await c.call('GET', `${V3}/globalnetworkpolicies`, {
        as: admin,
        accept: 'application/vnd.kubernetes.protobuf',
      });
      expect(none.status).toBe(406);
    });

    it('watches from a list’s revision: added, modified, deleted, and a selector’s ins and outs', async () => {
      const base = `${V3}/globalnetworkpolicies`;
      const rv = (await c.call('GET', base, { as: admin })).json.metadata.resourceVersion;
      const all = c.watchLines(`${base}?watch=true&resourceVersion=${rv}`, {
        as: admin,
        until: (e) => e.length >= 3,
      });
      const red = c.watchLines(`${base}?watch=1&resourceVersion=${rv}&labelSelector=color%3Dred`, {
        as: admin,
        until: (e) => e.length >= 2,
      });
      await new Promise((r) => setTimeout(r, 300));
      await c.call('POST', base, { as: admin, body: gnp('w1', { labels: { color: 'red' } }) });
      await c.call('PATCH', `${base}/w1`, {
        as: admin,
        body: { metadata: { labels: { color: 'green' } } },
        contentType: 'application/merge-patch+json',
      });
      await c.call('DELETE', `${base}/w1`, { as: admin });
      const summary = (events: unknown[]) =>
        (
          events as {
            type: string;
            object: { metadata: { name: string; labels?: Record<string, string> } };
          }[]
        ).map((e) => [e.type, e.object.metadata.name, e.object.metadata.labels?.color]);
      expect(summary(await all)).toEqual([
        ['ADDED', 'w1', 'red'],
        ['MODIFIED', 'w1', 'green'],
        ['DELETED', 'w1', 'green'],
      ]);
      // Out of the selector by the label change: DELETED then, nothing at the delete.
      expect(summary(await red)).toEqual([
        ['ADDED', 'w1', 'red'],
        ['DELETED', 'w1', 'green'],
      ]);
    });

    it('a watch with no resourceVersion starts with the current objects, as Table rows when asked', async () => {
      const events = (await c.watchLines(`${V3}/globalnetworkpolicies?watch=true&labelSelector=color%3Dred`, {
        as: admin,
        accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
        until: (e) => e.length >= 2,
      })) as { type: string; object: { kind: string; rows: { cells: string[] }[] } }[];
      expect(events.map((e) => [e.type, e.object.kind, e.object.rows[0]!.cells[0]])).toEqual([
        ['ADDED', 'Table', 'p1'],
        ['ADDED', 'Table', 'p3'],
      ]);
    });
  });

  describe('deletes', () => {
    it('returns the deleted object, then NotFound in Kubernetes’ words', async () => {
      const r = await c.call('DELETE', `${V3}/globalnetworkpolicies/p2`, { as: admin });
      expect(r.status).toBe(200);
      expect(r.json.metadata.name).toBe('p2');
      const again = await c.call('DELETE', `${V3}/globalnetworkpolicies/p2`, { as: admin });
      expect(again.status).toBe(404);
      expect(again.json).toMatchObject({
        reason: 'NotFound',
        message: 'globalnetworkpolicies.projectcalico.org "p2" not found',
        details: { name: 'p2', group: 'projectcalico.org', kind: 'globalnetworkpolicies' },
      });
    });

    it('honours a resourceVersion precondition and deletes a collection by selector', async () => {
      const stale = await c.call('DELETE', `${V3}/globalnetworkpolicies/p1`, {
        as: admin,
        body: { preconditions: { resourceVersion: '1' } },
      });
      expect(stale.json).toMatchObject({ reason: 'Conflict', code: 409 });
      const r = await c.call('DELETE', `${V3}/globalnetworkpolicies?labelSelector=color%3Dred`, {
        as: admin,
      });
      expect(r.status).toBe(200);
      expect(r.json.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual(['p1', 'p3']);
      expect((await datastore.list('GlobalNetworkPolicy')).items.map((i) => i.metadata.name)).toEqual([
        'allow-web',
      ]);
    });
  });
});
