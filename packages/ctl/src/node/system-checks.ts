/**
 * `node checksystem`: can this host run a calico-ts node? Pure: host facts in, upstream-style
 * report lines out (`calicoctl/commands/node/checksystem.go`: a line per item, `\t\t%-20s` then
 * `OK`/`FAIL`, and a closing verdict).
 *
 * What is checked is what calico-ts's own dataplane needs, which is not upstream's iptables list:
 * - the kernel version (upstream's minimum, 2.6.24);
 * - kernel modules or built-in features for the nftables dataplane (nf_tables with conntrack, NAT,
 *   masquerade and reject expressions, conntrack netlink), and, optional, the encapsulations
 *   (IPIP, VXLAN, WireGuard) and IPv6;
 * - the programs and libraries it runs: `ip` (iproute2) and libnftables; BIRD, optional, for BGP.
 *
 * A module counts as present when `modules.dep` or `modules.builtin` names it, when it is loaded
 * (`/proc/modules`, `/sys/module`), or when the kernel configuration has its option `=y`/`=m`
 * (the configuration is read from `--kernel-config`, upstream's paths, or `/proc/config.gz`).
 */

export const MIN_KERNEL_VERSION = '2.6.24';

export interface ModuleCheck {
  name: string;
  /** Kernel config options, any of which (`=y` or `=m`) provides it. */
  config: string[];
  /** Other module names that provide the same feature. */
  alternatives?: string[];
  /** Missing: a warning saying what is lost, not a failure. */
  optional?: string;
}

export const REQUIRED_MODULES: readonly ModuleCheck[] = [
  { name: 'nf_tables', config: ['CONFIG_NF_TABLES'] },
  { name: 'nf_conntrack', config: ['CONFIG_NF_CONNTRACK'] },
  { name: 'nf_conntrack_netlink', config: ['CONFIG_NF_CT_NETLINK'] },
  { name: 'nft_ct', config: ['CONFIG_NFT_CT'] },
  { name: 'nft_nat', config: ['CONFIG_NFT_NAT'] },
  { name: 'nft_masq', config: ['CONFIG_NFT_MASQ'] },
  { name: 'nft_reject', config: ['CONFIG_NFT_REJECT'], alternatives: ['nft_reject_inet'] },
  { name: 'ipv6', config: ['CONFIG_IPV6'], optional: 'IPv6 will be unavailable' },
  { name: 'ipip', config: ['CONFIG_NET_IPIP'], optional: 'IP-in-IP encapsulation will be unavailable' },
  { name: 'vxlan', config: ['CONFIG_VXLAN'], optional: 'VXLAN encapsulation will be unavailable' },
  { name: 'wireguard', config: ['CONFIG_WIREGUARD'], optional: 'WireGuard encryption will be unavailable' },
];

export interface ToolCheck {
  name: string;
  optional?: string;
}

export const REQUIRED_TOOLS: readonly ToolCheck[] = [
  { name: 'ip' },
  { name: 'libnftables.so.1' },
  { name: 'bird', optional: 'BGP networking will be unavailable' },
];

export interface SystemFacts {
  /** `uname -r`; undefined when it could not be read. */
  kernelRelease?: string;
  /** Contents of `/lib/modules/<release>/modules.dep`, when readable. */
  modulesDep?: string;
  modulesBuiltin?: string;
  /** `/proc/modules` (what lsmod shows). */
  procModules?: string;
  /** Names under `/sys/module`. */
  sysModules: ReadonlySet<string>;
  /** Kernel configuration text, when one was found. */
  kernelConfig?: string;
  /** Tool and library names that were found. */
  tools: ReadonlySet<string>;
}

export interface CheckLine {
  text: string;
}

/** Compare dotted versions numerically (`6.1.0-18-amd64` ≥ `2.6.24`), as go-version normalises them. */
export function versionAtLeast(version: string, min: string): boolean {
  const nums = (v: string) => (v.match(/^\d+(?:\.\d+)*/)?.[0] ?? '0').split('.').map(Number);
  const a = nums(version);
  const b = nums(min);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x > y;
  }
  return true;
}

/** Module names are written with `-` or `_` interchangeably. */
const norm = (s: string) => s.replaceAll('-', '_');

function inModuleList(list: string | undefined, name: string): boolean {
  if (!list) return false;
  const want = norm(name);
  for (const line of list.split('\n')) {
    const path = line.split(':')[0]!.trim();
    const base = path.slice(path.lastIndexOf('/') + 1).replace(/\.ko(\.\w+)?$/, '');
    if (path.includes('.ko') && norm(base) === want) return true;
  }
  return false;
}

function loaded(facts: SystemFacts, name: string): boolean {
  const want = norm(name);
  if (facts.sysModules.has(want)) return true;
  return (facts.procModules ?? '').split('\n').some((l) => norm(l.split(' ')[0] ?? '') === want);
}

function configured(config: string | undefined, option: string): boolean {
  if (!config) return false;
  return config.split('\n').some((l) => l.startsWith(`${option}=y`) || l.startsWith(`${option}=m`));
}

export function moduleAvailable(m: ModuleCheck, facts: SystemFacts): boolean {
  for (const name of [m.name, ...(m.alternatives ?? [])]) {
    if (inModuleList(facts.modulesDep, name) || inModuleList(facts.modulesBuiltin, name)) return true;
    if (loaded(facts, name)) return true;
  }
  return m.config.some((o) => configured(facts.kernelConfig, o));
}

export function result(val: string, verdict: string): string {
  return `\t\t${val.padEnd(20)}\t\t\t\t\t${verdict}\n`;
}

export interface SystemReport {
  text: string;
  ok: boolean;
}

export function checkSystem(facts: SystemFacts): SystemReport {
  let text = '';
  let ok = true;

  text += 'Checking kernel version...\n';
  if (facts.kernelRelease === undefined) {
    text += result('', 'FAIL');
    ok = false;
  } else if (!versionAtLeast(facts.kernelRelease, MIN_KERNEL_VERSION)) {
    text += result(facts.kernelRelease, 'FAIL');
    text += `Minimum kernel version to run Calico is ${MIN_KERNEL_VERSION}. Detected kernel version: ${facts.kernelRelease}\n`;
    ok = false;
  } else {
    text += result(facts.kernelRelease, 'OK');
  }

  text += 'Checking kernel modules...\n';
  for (const m of REQUIRED_MODULES) {
    if (moduleAvailable(m, facts)) {
      text += result(m.name, 'OK');
    } else if (m.optional) {
      text += `WARNING: ${m.optional} as the ${m.name} kernel module is not found\n`;
      text += result(m.name, 'WARNING');
    } else {
      text += `WARNING: Unable to detect the ${m.name} module as Loaded/Builtin module or lsmod\n`;
      text += result(m.name, 'FAIL');
      ok = false;
    }
  }

  text += 'Checking tools...\n';
  for (const t of REQUIRED_TOOLS) {
    if (facts.tools.has(t.name)) {
      text += result(t.name, 'OK');
    } else if (t.optional) {
      text += `WARNING: ${t.optional} as ${t.name} is not found\n`;
      text += result(t.name, 'WARNING');
    } else {
      text += `WARNING: Unable to find ${t.name}\n`;
      text += result(t.name, 'FAIL');
      ok = false;
    }
  }

  if (ok) text += 'System meets minimum system requirements to run Calico!\n';
  return { text, ok };
}
