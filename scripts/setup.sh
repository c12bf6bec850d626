#!/usr/bin/env bash
# One-time set-up of a fresh Debian 12 machine for calico-ts: system packages, pnpm, dependencies.
# Idempotent: skips what is already there. Needs root (apt).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  etcd-server etcd-client bird2 nftables libnftables1 iproute2 iputils-ping
  containernetworking-plugins iperf3 openssl gobgpd
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's etcd-server package starts a system etcd on 2379; nothing here uses it (tests start
# private ones on free ports), so leave it as the package set it up.

want_pnpm=$(node -p "require('./package.json').packageManager.split('@')[1]")
if [ "$(pnpm --version 2>/dev/null || true)" != "$want_pnpm" ]; then
  echo "setup: installing pnpm $want_pnpm"
  npm install -g "pnpm@$want_pnpm" >/dev/null 2>&1
fi
pnpm install --frozen-lockfile
