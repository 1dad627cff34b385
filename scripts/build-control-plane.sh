#!/usr/bin/env bash
# Builds a real Kubernetes control plane (kube-apiserver, kube-controller-manager,
# kube-scheduler, kube-proxy) and etcd from the Go module proxy, pinned, into a cache
# directory outside the repository keyed by version. Once per machine: a second run with
# the binaries present returns at once. Prints the directory holding the binaries.
#
#   scripts/build-control-plane.sh            # build if missing, print the bin directory
#   BERTH_CACHE=/somewhere scripts/build-control-plane.sh
#
# The first build takes roughly 7-13 minutes on 2 cores (Go build cache ~3 GB, module
# cache ~0.8 GB; both are kept, so a rebuild after a version bump is quicker).
set -euo pipefail

KUBERNETES_VERSION="${BERTH_KUBERNETES_VERSION:-v1.34.4}"
ETCD_VERSION="${BERTH_ETCD_VERSION:-v3.6.6}"
CACHE="${BERTH_CACHE:-$HOME/.cache/berth}"
OUT="$CACHE/control-plane-$KUBERNETES_VERSION-etcd-$ETCD_VERSION"
BIN="$OUT/bin"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd)

have_all() {
  for b in "${BINARIES[@]}"; do [[ -x "$BIN/$b" ]] || return 1; done
}

if have_all; then
  echo "$BIN"
  exit 0
fi

# Test files start in parallel and may all find the cache empty: one builds, the others wait.
mkdir -p "$CACHE"
exec 9>"$CACHE/.control-plane.lock"
flock 9
if have_all; then
  echo "$BIN"
  exit 0
fi

if ! command -v go >/dev/null; then
  if [[ -x /usr/local/go/bin/go ]]; then export PATH="/usr/local/go/bin:$PATH"; else
    echo "build-control-plane: Go is not installed (needed once to build the control plane)" >&2
    exit 1
  fi
fi

export GOFLAGS=-mod=mod
export GOTOOLCHAIN=local
export CGO_ENABLED=0
mkdir -p "$OUT/src/kubernetes" "$OUT/src/etcd" "$BIN"
started=$(date +%s)

# kube-apiserver and friends: k8s.io/kubernetes is not meant to be imported, so its staging
# modules appear in its go.mod at v0.0.0 with replace directives into ./staging. A module of
# ours replaces each with the published release of the same minor (v0.34.x for v1.34.x).
(
  cd "$OUT/src/kubernetes"
  staging_version="v0.${KUBERNETES_VERSION#v1.}"
  rm -f go.mod go.sum
  go mod init berth.dev/control-plane >/dev/null 2>&1
  gomod=$(go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')
  [[ -f "$gomod" ]] || { echo "build-control-plane: no go.mod for k8s.io/kubernetes@$KUBERNETES_VERSION" >&2; exit 1; }
  mapfile -t staging < <(awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" { print $1 }' "$gomod" | sort -u)
  [[ ${#staging[@]} -gt 0 ]] || { echo "build-control-plane: found no staging modules in $gomod" >&2; exit 1; }
  {
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    for m in "${staging[@]}"; do echo "replace $m => $m $staging_version"; done
  } >>go.mod
  cat >tools.go <<'EOF'
//go:build tools

// Blank imports so that `go mod tidy` resolves every dependency of the commands built.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
EOF
  go mod tidy >/dev/null
  ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)"
  for cmd in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
    [[ -x "$BIN/$cmd" ]] && continue
    echo "build-control-plane: building $cmd $KUBERNETES_VERSION" >&2
    go build -trimpath -ldflags "$ldflags" -o "$BIN/$cmd.partial" "k8s.io/kubernetes/cmd/$cmd"
    mv "$BIN/$cmd.partial" "$BIN/$cmd"
  done
)

(
  cd "$OUT/src/etcd"
  if [[ ! -x "$BIN/etcd" ]]; then
    rm -f go.mod go.sum
    go mod init berth.dev/etcd >/dev/null 2>&1
    echo "require go.etcd.io/etcd/server/v3 $ETCD_VERSION" >>go.mod
    cat >main.go <<'EOF'
// etcd's own server entry point, built at a pinned release.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
    go mod tidy >/dev/null
    echo "build-control-plane: building etcd $ETCD_VERSION" >&2
    go build -trimpath -ldflags "-s -w" -o "$BIN/etcd.partial" .
    mv "$BIN/etcd.partial" "$BIN/etcd"
  fi
)

have_all || { echo "build-control-plane: a binary is missing after the build" >&2; exit 1; }
echo "build-control-plane: built in $(( $(date +%s) - started )) s" >&2
echo "$BIN"
