import { describe, expect, test } from 'vitest';
import { nodeChecksystemCommand } from '../commands/node.js';
import { memoryIO } from '../io.js';
import { silentLogger } from '../log.js';
import { checkSystem, moduleAvailable, type SystemFacts, versionAtLeast } from './system-checks.js';
import type { SystemHost } from './system-host.js';

const ALL_CONFIG = [
  'CONFIG_NF_TABLES=m',
  'CONFIG_NF_CONNTRACK=m',
  'CONFIG_NF_CT_NETLINK=m',
  'CONFIG_NFT_CT=m',
  'CONFIG_NFT_NAT=m',
  'CONFIG_NFT_MASQ=m',
  'CONFIG_NFT_REJECT=m',
  'CONFIG_IPV6=y',
  'CONFIG_NET_IPIP=m',
  'CONFIG_VXLAN=m',
  'CONFIG_WIREGUARD=m',
].join('\n');

const facts = (over: Partial<SystemFacts> = {}): SystemFacts => ({
  kernelRelease: '6.1.0-18-amd64',
  sysModules: new Set(),
  kernelConfig: ALL_CONFIG,
  tools: new Set(['ip', 'libnftables.so.1', 'bird']),
  ...over,
});

const row = (v: string, r: string) => `\t\t${v.padEnd(20)}\t\t\t\t\t${r}\n`;

describe('node checksystem', () => {
  test('a capable host: every line OK and the verdict', () => {
    expect(checkSystem(facts())).toEqual({
      ok: true,
      text:
        'Checking kernel version...\n' +
        row('6.1.0-18-amd64', 'OK') +
        'Checking kernel modules...\n' +
        [
          'nf_tables',
          'nf_conntrack',
          'nf_conntrack_netlink',
          'nft_ct',
          'nft_nat',
          'nft_masq',
          'nft_reject',
          'ipv6',
          'ipip',
          'vxlan',
          'wireguard',
        ]
          .map((m) => row(m, 'OK'))
          .join('') +
        'Checking tools...\n' +
        row('ip', 'OK') +
        row('libnftables.so.1', 'OK') +
        row('bird', 'OK') +
        'System meets minimum system requirements to run Calico!\n',
    });
  });

  test('modules found in modules.dep (compressed), modules.builtin, /proc/modules or /sys/module', () => {
    const f = facts({
      kernelConfig: undefined,
      modulesDep:
        'kernel/net/netfilter/nf_tables.ko.xz: kernel/lib/x.ko\nkernel/net/netfilter/nft-ct.ko.zst:\n',
      modulesBuiltin: 'kernel/net/netfilter/nf_conntrack.ko\n',
      procModules: 'nft_masq 16384 1 - Live 0x0\n',
      sysModules: new Set(['nft_reject_inet']),
    });
    const has = (name: string) =>
      moduleAvailable(
        { name, config: [], ...(name === 'nft_reject' ? { alternatives: ['nft_reject_inet'] } : {}) },
        f,
      );
    expect(['nf_tables', 'nft_ct', 'nf_conntrack', 'nft_masq', 'nft_reject'].map(has)).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(has('nft_nat')).toBe(false);
  });

  test('a missing required module or tool fails; a missing optional one warns', () => {
    const r = checkSystem(
      facts({
        kernelConfig: ALL_CONFIG.replace('CONFIG_NFT_MASQ=m', '# CONFIG_NFT_MASQ is not set').replace(
          'CONFIG_WIREGUARD=m',
          '',
        ),
        tools: new Set(['ip', 'libnftables.so.1']),
      }),
    );
    expect(r.ok).toBe(false);
    expect(r.text).toContain(
      `WARNING: Unable to detect the nft_masq module as Loaded/Builtin module or lsmod\n${row('nft_masq', 'FAIL')}`,
    );
    expect(r.text).toContain(
      `WARNING: WireGuard encryption will be unavailable as the wireguard kernel module is not found\n${row('wireguard', 'WARNING')}`,
    );
    expect(r.text).toContain(
      `WARNING: BGP networking will be unavailable as bird is not found\n${row('bird', 'WARNING')}`,
    );
    expect(r.text).not.toContain('System meets');
    expect(checkSystem(facts({ tools: new Set(['ip', 'libnftables.so.1']) })).ok).toBe(true);
  });

  test('kernel versions compare numerically', () => {
    expect(versionAtLeast('2.6.24', '2.6.24')).toBe(true);
    expect(versionAtLeast('2.6.9', '2.6.24')).toBe(false);
    expect(versionAtLeast('10.0', '2.6.24')).toBe(true);
    expect(checkSystem(facts({ kernelRelease: '2.6.18-xen' })).text).toContain(
      `${row('2.6.18-xen', 'FAIL')}Minimum kernel version to run Calico is 2.6.24. Detected kernel version: 2.6.18-xen\n`,
    );
  });

  test('the command: root only; exit 1 with upstream’s message when the host falls short', async () => {
    const host = (root: boolean, f: SystemFacts): SystemHost => ({
      isRoot: () => root,
      facts: async () => f,
    });
    const io = memoryIO();
    expect(await nodeChecksystemCommand({}, host(true, facts()), { io, log: silentLogger })).toBe(0);
    expect(io.stdoutText).toContain('System meets minimum system requirements to run Calico!\n');
    await expect(
      nodeChecksystemCommand({}, host(false, facts()), { io: memoryIO(), log: silentLogger }),
    ).rejects.toThrow('Need super user privileges: Operation not permitted');
    await expect(
      nodeChecksystemCommand({}, host(true, facts({ kernelConfig: '' })), {
        io: memoryIO(),
        log: silentLogger,
      }),
    ).rejects.toThrow("System doesn't meet one or more minimum systems requirements to run Calico");
  });
});
