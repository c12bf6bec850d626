/**
 * mTLS end to end: `lab up --tls --datastore etcdv3 --nodes 2` runs etcd over https, accepting only
 * clients with a certificate from the CA made at lab start. Observed: calico-node (Felix, BIRD's
 * configuration), the CNI plugin (etcd_ca_cert_file, etcd_cert_file, etcd_key_file), calicoctl,
 * kube-controllers and kube-apiserver all work through it; a client with the CA but no certificate
 * is refused, and so is plain http; no private key (nor the kubeconfig's client key) appears in any
 * log the lab wrote.
 * Needs what the other lab tests need.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LabDriver, missingPrerequisites, netnsList } from './lab-driver.js';

const ci = process.env.CI === 'true';
const missing = missingPrerequisites('etcdv3');
if (missing.length > 0) {
  describe('lab --tls', () => {
    it.skipIf(!ci)('has its prerequisites', () => {
      throw new Error(`missing prerequisites: ${missing.join(', ')}`);
    });
  });
}

/** Every file below `dir`, recursively. */
function filesBelow(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesBelow(p) : [p];
  });
}

/** The base64 lines of a PEM file's body: each is key material on its own. */
function pemBodyLines(file: string): string[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('-----'));
}

describe.skipIf(missing.length > 0)('lab --tls: etcd with client certificates only', () => {
  const name = `e2t${Math.random().toString(16).slice(2, 6)}`;
  let dir: string;
  let lab: LabDriver;
  const tls = () => join(lab.stateDir, 'etcd-tls');
  const etcdctl = (...args: string[]) =>
    spawnSync(
      'ip',
      [
        'netns',
        'exec',
        `${name}-etcd`,
        'etcdctl',
        '--endpoints=https://198.18.0.2:2379',
        '--command-timeout=3s',
        ...args,
      ],
      { encoding: 'utf8', env: { ...process.env, ETCDCTL_API: '3' } },
    );

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'calico-e2e-tls-'));
    lab = new LabDriver(name, join(dir, 'state'));
    const up = await lab.run('up', '--nodes', '2', '--datastore', 'etcdv3', '--tls');
    expect(up.code, up.stdout + up.stderr).toBe(0);
    console.log(`lab up (bgp, etcdv3, --tls) took ${(up.ms / 1000).toFixed(1)} s`);
    expect(up.stdout).toContain('https://198.18.0.2:2379');
    await lab.ok('ns', 'create', 'blue');
    await lab.ok('pod', 'create', 'blue/a', '--node', 'n1');
    await lab.ok('pod', 'create', 'blue/b', '--node', 'n2');
  }, 180_000);

  afterAll(async () => {
    if (lab && existsSync(join(lab.stateDir, 'state.json'))) await lab.run('down');
    if (dir) await rm(dir, { recursive: true, force: true });
    if (process.env.CALICO_E2E_VERBOSE === '1') console.log(lab?.log.join('\n'));
  }, 60_000);

  it('calico-node, the CNI plugin and kube-controllers work over it: pods on both nodes talk', async () => {
    const report = await lab.connectivity('tcp');
    expect(report.cells.filter((c) => !c.reachable).map((c) => `${c.from}->${c.to}: ${c.error}`)).toEqual([]);
    expect(report.reachable).toBe(2);
    // kube-controllers' namespace controller wrote the namespace's profile through it.
    const profiles = await lab.ok('calicoctl', 'get', 'profiles');
    expect(profiles.stdout).toContain('kns.blue');
  }, 60_000);

  it('calicoctl reads through it with the certificate its config names', async () => {
    const cfg = readFileSync(join(lab.stateDir, 'calicoctl.cfg'), 'utf8');
    expect(cfg).toContain(`etcdCertFile: ${join(tls(), 'client.pem')}`);
    const nodes = await lab.ok('calicoctl', 'get', 'nodes');
    expect(
      nodes.stdout
        .trim()
        .split('\n')
        .map((l) => l.trim())
        .sort(),
    ).toEqual(['NAME', 'n1', 'n2']);
  });

  it('a client without a certificate is refused, and so is plain http', () => {
    const withCert = etcdctl(
      `--cacert=${join(tls(), 'ca.pem')}`,
      `--cert=${join(tls(), 'client.pem')}`,
      `--key=${join(tls(), 'client-key.pem')}`,
      'get',
      '/calico/resources/v3/projectcalico.org/nodes/n1',
      '--print-value-only',
    );
    expect(withCert.status, withCert.stderr).toBe(0);
    expect(JSON.parse(withCert.stdout).metadata.name).toBe('n1');
    const withoutCert = etcdctl(
      `--cacert=${join(tls(), 'ca.pem')}`,
      'get',
      '/calico/',
      '--prefix',
      '--keys-only',
    );
    expect(withoutCert.status).not.toBe(0);
    expect(withoutCert.stdout).toBe('');
    const http = spawnSync(
      'ip',
      ['netns', 'exec', `${name}-etcd`, 'curl', '-s', '-m', '3', 'http://198.18.0.2:2379/version'],
      { encoding: 'utf8' },
    );
    expect(http.status).not.toBe(0);
    expect(http.stdout).not.toContain('etcdserver');
  });

  it('no private key, nor the kubeconfig’s client key, appears in any log the lab wrote', () => {
    const keyFiles = [...filesBelow(tls()), ...filesBelow(join(lab.stateDir, 'kube'))].filter((f) =>
      f.endsWith('-key.pem'),
    );
    expect(keyFiles.length).toBeGreaterThanOrEqual(5);
    const secrets = keyFiles.flatMap(pemBodyLines).filter((l) => l.length >= 16);
    const kubeconfig = readFileSync(join(lab.stateDir, 'kubeconfig'), 'utf8');
    const clientKeyData = /client-key-data: (\S+)/.exec(kubeconfig)?.[1];
    expect(clientKeyData).toBeDefined();
    secrets.push(clientKeyData!);
    const logs = filesBelow(lab.stateDir).filter((f) => f.endsWith('.log'));
    expect(logs.length).toBeGreaterThanOrEqual(6);
    const leaks = logs.flatMap((f) => {
      const text = readFileSync(f, 'utf8');
      return secrets.filter((s) => text.includes(s)).map((s) => `${f}: ${s.slice(0, 8)}…`);
    });
    expect(leaks).toEqual([]);
  });

  it('lab down leaves no namespace', async () => {
    await lab.ok('down');
    expect(netnsList().filter((n) => n.startsWith(`${name}-`))).toEqual([]);
  }, 60_000);
});
