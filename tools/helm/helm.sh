#!/bin/sh
# `pnpm helm ARGS`: runs the helm that scripts/setup.sh built from the version pinned in this
# directory's go.mod and cached in /var/cache/calico-ts/bin (CALICO_HELM_BIN overrides).
set -eu
dir=$(dirname "$0")
version=$(awk '$1 == "require" && $2 == "helm.sh/helm/v3" { print $3 } $1 == "helm.sh/helm/v3" { print $2 }' \
  "$dir/go.mod" | head -n1)
bin=${CALICO_HELM_BIN:-/var/cache/calico-ts/bin/helm-$version}
if [ ! -x "$bin" ]; then
  echo "helm: $bin is missing; run scripts/setup.sh to build it" >&2
  exit 127
fi
exec "$bin" "$@"
