import { describe, expect, it } from 'vitest';
import { COMMAND_USAGE, parseLabArgs, usageText } from './cli.js';
import { isLabError } from './errors.js';

const usageError = (argv: string[], text: RegExp) => {
  try {
    parseLabArgs(argv);
  } catch (e) {
    expect(isLabError(e, 'usage')).toBe(true);
    expect((e as Error).message).toMatch(text);
    return;
  }
  throw new Error(`expected a usage error for ${argv.join(' ')}`);
};

describe('pnpm lab command line', () => {
  it('up: defaults 3 nodes, bgp, the Kubernetes datastore; flags in both forms', () => {
    expect(parseLabArgs(['up'])).toEqual({
      name: 'lab',
      command: {
        kind: 'up',
        nodes: 3,
        mode: 'bgp',
        datastore: 'kubernetes',
        topology: 'flat',
        ipFamily: '4',
      },
    });
    expect(parseLabArgs(['up', '--nodes', '5', '--mode=vxlan', '--datastore=etcdv3']).command).toEqual({
      kind: 'up',
      nodes: 5,
      mode: 'vxlan',
      datastore: 'etcdv3',
      topology: 'flat',
      ipFamily: '4',
    });
  });
  it('up --kubelet: manifest by default, --install none, and refusals that say why', () => {
    expect(parseLabArgs(['up', '--kubelet']).command).toEqual({
      kind: 'up',
      nodes: 3,
      mode: 'bgp',
      datastore: 'kubernetes',
      topology: 'flat',
      ipFamily: '4',
      kubelet: 'manifest',
    });
    expect(parseLabArgs(['up', '--kubelet', '--install', 'none', '--mode', 'vxlan']).command).toMatchObject({
      mode: 'vxlan',
      kubelet: 'none',
    });
    usageError(
      ['up', '--install', 'none'],
      /--install picks how a --kubelet cluster gets Calico; add --kubelet/,
    );
    usageError(
      ['up', '--kubelet', '--install', 'kops'],
      /--install must be manifest, etcd, policy-only, helm, operator, operator-helm, none, got "kops"/,
    );
    usageError(
      ['up', '--kubelet', '--images'],
      /--kubelet installs Calico from its manifest .*--images not with it yet/,
    );
    usageError(['up', '--kubelet', '--mode', 'ipip'], /--kubelet runs --mode bgp or vxlan, got --mode ipip/);
    usageError(['up', '--kubelet', '--datastore', 'etcdv3'], /the datastore is what --install puts in place/);
    expect(parseLabArgs(['up', '--kubelet', '--install', 'etcd']).command).toMatchObject({
      datastore: 'etcdv3',
      kubelet: 'etcd',
    });
    expect(usageText('up')).toContain('--kubelet');
  });
  it('up --kubelet --install operator-helm --helm-values: eks, aks or a file; refusals that say why', () => {
    expect(
      parseLabArgs(['up', '--kubelet', '--install', 'operator-helm', '--helm-values', 'eks']).command,
    ).toMatchObject({ kubelet: 'operator-helm', helmValues: 'eks' });
    expect(
      parseLabArgs(['up', '--kubelet', '--install', 'operator-helm', '--helm-values', 'my/values.yaml'])
        .command,
    ).toMatchObject({ helmValues: 'my/values.yaml' });
    usageError(
      ['up', '--kubelet', '--install', 'operator', '--helm-values', 'aks'],
      /--helm-values gives the operator chart its values; use it with --kubelet --install operator-helm/,
    );
    usageError(
      ['up', '--kubelet', '--install', 'operator-helm', '--helm-values', 'aks', '--mode', 'vxlan'],
      /the values decide the network .*leave out --mode/,
    );
    expect(usageText('up')).toContain('--helm-values');
  });
  it('up --images: a switch, no value', () => {
    expect(parseLabArgs(['up', '--images', '--mode', 'vxlan']).command).toEqual({
      kind: 'up',
      nodes: 3,
      mode: 'vxlan',
      datastore: 'kubernetes',
      topology: 'flat',
      ipFamily: '4',
      images: true,
    });
    usageError(['up', '--images=yes'], /--images takes no value/);
    expect(usageText('up')).toContain('--images');
  });
  it('takes the lab name and state dir from flags before the command, or the environment', () => {
    expect(parseLabArgs(['--name', 'e2e1', '--state-dir=/tmp/x', 'down'])).toEqual({
      name: 'e2e1',
      stateDir: '/tmp/x',
      command: { kind: 'down' },
    });
    expect(
      parseLabArgs(['status'], { CALICO_LAB_NAME: 'other', CALICO_LAB_STATE_DIR: '/tmp/y' }),
    ).toMatchObject({
      name: 'other',
      stateDir: '/tmp/y',
    });
  });
  it('ns create and pod create with labels, node and ports', () => {
    expect(parseLabArgs(['ns', 'create', 'team-a', '--labels', 'env=prod,tier=web']).command).toEqual({
      kind: 'ns-create',
      namespace: 'team-a',
      labels: { env: 'prod', tier: 'web' },
    });
    expect(
      parseLabArgs([
        'pod',
        'create',
        'team-a/web-1',
        '--node',
        'n2',
        '--labels',
        'app=web',
        '-l',
        'v=1',
        '--ports',
        '80,http=8080',
        '--service-account',
        'robot',
        '--annotations',
        'cni.projectcalico.org/ipAddrs=["198.19.9.9"]',
      ]).command,
    ).toEqual({
      kind: 'pod-create',
      namespace: 'team-a',
      name: 'web-1',
      node: 'n2',
      labels: { app: 'web', v: '1' },
      annotations: { 'cni.projectcalico.org/ipAddrs': '["198.19.9.9"]' },
      serviceAccount: 'robot',
      ports: [{ port: 80 }, { port: 8080, name: 'http' }],
    });
    expect(parseLabArgs(['pod', 'create', 'a/b']).command).toEqual({
      kind: 'pod-create',
      namespace: 'a',
      name: 'b',
      labels: {},
      annotations: {},
      ports: [{ port: 80 }],
    });
  });
  it('pod exec passes everything after -- through', () => {
    expect(parseLabArgs(['pod', 'exec', 'a/b', '--', 'ping', '-c', '1', '198.19.0.5']).command).toEqual({
      kind: 'pod-exec',
      namespace: 'a',
      name: 'b',
      argv: ['ping', '-c', '1', '198.19.0.5'],
    });
  });
  it('calicoctl and kubectl pass their arguments through untouched', () => {
    expect(parseLabArgs(['calicoctl', 'get', 'nodes', '-o', 'wide']).command).toEqual({
      kind: 'calicoctl',
      argv: ['get', 'nodes', '-o', 'wide'],
    });
    expect(parseLabArgs(['kubectl', 'apply', '-f', '-', '--server-side']).command).toEqual({
      kind: 'kubectl',
      argv: ['apply', '-f', '-', '--server-side'],
    });
  });
  it('connectivity defaults and options', () => {
    expect(parseLabArgs(['connectivity']).command).toEqual({
      kind: 'connectivity',
      port: 80,
      protocol: 'tcp',
      output: 'table',
      timeoutMs: 1500,
    });
    expect(
      parseLabArgs(['connectivity', '--port', '8080', '--protocol', 'UDP', '-o', 'json']).command,
    ).toMatchObject({
      port: 8080,
      protocol: 'udp',
      output: 'json',
    });
  });
  it('up --topology two-subnets: a value, flat or two-subnets', () => {
    expect(parseLabArgs(['up', '--mode', 'vxlan', '--topology', 'two-subnets']).command).toMatchObject({
      mode: 'vxlan',
      topology: 'two-subnets',
    });
    usageError(['up', '--topology', 'ring'], /--topology must be flat or two-subnets, got "ring"/);
    expect(usageText('up')).toMatch(/two-subnets: the first half of the nodes on 198.18.0.0\/24/);
  });
  it('up --tls: a switch, not with --images', () => {
    expect(parseLabArgs(['up', '--tls', '--datastore', 'etcdv3']).command).toMatchObject({ tls: true });
    usageError(['up', '--tls', '--images'], /--tls runs the built programs/);
    expect(parseLabArgs(['up', '--typha']).command).toMatchObject({ kind: 'up', typha: true });
    usageError(['up', '--typha', '--images'], /no typha image yet/);
    usageError(['up', '--typha', '--tls'], /--typha does not take --tls yet/);
  });
  it('up --mode policy-only: on the Kubernetes datastore', () => {
    expect(parseLabArgs(['up', '--mode', 'policy-only', '--nodes', '2']).command).toEqual({
      kind: 'up',
      nodes: 2,
      mode: 'policy-only',
      datastore: 'kubernetes',
      topology: 'flat',
      ipFamily: '4',
    });
    expect(usageText('up')).toMatch(/policy-only: Calico polices only/);
  });
  it('up --ip-family: 4, 6 or dual; connectivity --family: 4 or 6', () => {
    expect(parseLabArgs(['up', '--ip-family', 'dual']).command).toMatchObject({
      kind: 'up',
      ipFamily: 'dual',
    });
    expect(parseLabArgs(['up', '--ip-family=6']).command).toMatchObject({ ipFamily: '6' });
    usageError(['up', '--ip-family', 'ipv6'], /--ip-family must be 4, 6 or dual, got "ipv6"/);
    expect(usageText('up')).toContain('--ip-family 4|6|dual');
    expect(parseLabArgs(['connectivity']).command).not.toHaveProperty('families');
    expect(parseLabArgs(['connectivity', '--family', '6']).command).toMatchObject({ families: [6] });
    usageError(['connectivity', '--family', '5'], /--family must be 4 or 6, got "5"/);
    expect(usageText('connectivity')).toContain('--family 4|6');
  });
  it('up --mode ipip', () => {
    expect(parseLabArgs(['up', '--mode', 'ipip']).command).toMatchObject({ kind: 'up', mode: 'ipip' });
    expect(usageText('up')).toMatch(/ipip: the same with the pool in\s+ipipMode Always/);
  });
  it('says what is wrong and what is accepted', () => {
    usageError(['up', '--nodes', 'three'], /--nodes must be a whole number from 1 to 50, got "three"/);
    usageError(['up', '--nodes', '0'], /--nodes must be a whole number/);
    usageError(['up', '--mode', 'gre'], /--mode must be bgp, ipip, vxlan or policy-only, got "gre"/);
    usageError(
      ['up', '--mode', 'policy-only', '--datastore', 'etcdv3'],
      /--mode policy-only runs on the Kubernetes datastore.*leave out --datastore etcdv3/,
    );
    usageError(
      ['up', '--node', '3'],
      /up: unknown flag --node \(accepted: --nodes, --mode, --datastore, --topology, --ip-family, --tls, --typha, --images, --kubelet, --install, --helm-values\)/,
    );
    usageError(['up', '--datastore', 'etcd'], /--datastore must be etcdv3 or kubernetes, got "etcd"/);
    usageError(['down', '--force'], /down: unknown flag --force \(it takes no flags\)/);
    usageError(['pod', 'create', 'web'], /pod "web" must be given as NAMESPACE\/NAME/);
    usageError(['pod', 'create', 'Team/web'], /namespace "Team" must be lower-case/);
    usageError(['ns', 'create', 'a', '--labels', 'novalue'], /label "novalue" must be key=value/);
    usageError(['connectivity', '--protocol', 'icmp'], /--protocol must be tcp or udp/);
    usageError(['pod', 'exec', 'a/b'], /pod exec needs NAMESPACE\/NAME -- COMMAND/);
    usageError(['start'], /unknown command "start"[\s\S]*pnpm lab help/);
    usageError(['--name', 'Bad_Name', 'up'], /lab name "Bad_Name" must start with a letter/);
    usageError(['up', '--nodes'], /--nodes needs a value/);
    usageError(['pod', 'create', 'a/b', '--service-account', 'Robot'], /--service-account "Robot" must be/);
    usageError(['help', 'start'], /help: no command "start"/);
  });
  it('bench takes a pod count and an output format', () => {
    expect(parseLabArgs(['bench']).command).toEqual({ kind: 'bench', pods: 6, output: 'table' });
    expect(parseLabArgs(['bench', '--pods', '9', '-o', 'json']).command).toEqual({
      kind: 'bench',
      pods: 9,
      output: 'json',
    });
    usageError(['bench', '--pods', '1'], /--pods must be a whole number from 2 to 100/);
  });
  it('help with no command', () => {
    expect(parseLabArgs([]).command).toEqual({ kind: 'help' });
    expect(parseLabArgs(['help']).command).toEqual({ kind: 'help' });
    expect(parseLabArgs(['-h']).command).toEqual({ kind: 'help' });
  });
  it('every command answers --help and -h with its own usage, whatever else is on the line', () => {
    const lines: [string[], string][] = [
      [['up'], 'up'],
      [['down'], 'down'],
      [['status', '-o', 'json'], 'status'],
      [['ns', 'create', 'x'], 'ns create'],
      [['namespace', 'create'], 'ns create'],
      [['pod', 'create', 'a/b', '--node', 'n1'], 'pod create'],
      [['pod', 'create', '--bogus'], 'pod create'],
      [['pod', 'delete', 'a/b'], 'pod delete'],
      [['pod', 'exec', 'a/b'], 'pod exec'],
      [['connectivity', '--port', '80'], 'connectivity'],
      [['bench'], 'bench'],
    ];
    for (const [argv, topic] of lines) {
      for (const flag of ['--help', '-h']) {
        expect(parseLabArgs([...argv, flag]).command, `${argv.join(' ')} ${flag}`).toEqual({
          kind: 'help',
          topic,
        });
      }
    }
    // calicoctl and kubectl: only as their first argument; after it, the flag is theirs.
    expect(parseLabArgs(['kubectl', '--help']).command).toEqual({ kind: 'help', topic: 'kubectl' });
    expect(parseLabArgs(['calicoctl', '-h']).command).toEqual({ kind: 'help', topic: 'calicoctl' });
    expect(parseLabArgs(['kubectl', 'get', '--help']).command).toEqual({
      kind: 'kubectl',
      argv: ['get', '--help'],
    });
    // After `--` it belongs to the command run in the pod.
    expect(parseLabArgs(['pod', 'exec', 'a/b', '--', 'ping', '-h']).command).toMatchObject({
      kind: 'pod-exec',
      argv: ['ping', '-h'],
    });
    expect(parseLabArgs(['help', 'pod', 'create']).command).toEqual({ kind: 'help', topic: 'pod create' });
    expect(parseLabArgs(['pod', '--help']).command).toEqual({ kind: 'help', topic: 'pod' });
  });
  it("each command's usage names the command and its flags", () => {
    expect(usageText('pod create')).toMatch(/^Usage: pnpm lab pod create NS\/NAME/);
    for (const flag of ['--node', '--labels', '--ports', '--service-account', '--annotations'])
      expect(usageText('pod create')).toContain(flag);
    expect(usageText('up')).toMatch(/--datastore D +kubernetes: .*\(default\)/);
    expect(usageText('pod')).toContain('Usage: pnpm lab pod delete');
    for (const [topic, text] of Object.entries(COMMAND_USAGE))
      expect(text, topic).toMatch(new RegExp(`^Usage: pnpm lab ${topic}`));
  });
});
