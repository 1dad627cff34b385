#!/usr/bin/env bash
# Fetches the CustomResourceDefinitions berth's next steps build on, pinned, from their Go
# modules (the module proxy serves each repository's config/crd tree), into a cache directory
# outside the repository. Prints the directory: lws/, gateway-api/ and inference-extension/.
#   LeaderWorkerSet         sigs.k8s.io/lws                              config/crd/bases
#   Gateway API (standard)  sigs.k8s.io/gateway-api                      config/crd/standard
#   InferencePool           sigs.k8s.io/gateway-api-inference-extension  config/crd/bases
set -euo pipefail

LWS_VERSION=v0.7.0
GATEWAY_API_VERSION=v1.6.3
INFERENCE_EXTENSION_VERSION=v1.6.2
CACHE="${BERTH_CACHE:-$HOME/.cache/berth}"
OUT="$CACHE/crds-lws-$LWS_VERSION-gateway-$GATEWAY_API_VERSION-inference-$INFERENCE_EXTENSION_VERSION"

if [[ -f "$OUT/.complete" ]]; then
  echo "$OUT"
  exit 0
fi
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then export PATH="/usr/local/go/bin:$PATH"; fi
export GOFLAGS=-mod=mod GOTOOLCHAIN=local

module_dir() {
  go mod download -json "$1" | sed -n 's/^\s*"Dir": "\(.*\)",\?$/\1/p'
}

rm -rf "$OUT.partial"
mkdir -p "$OUT.partial"/{lws,gateway-api,inference-extension}
cp "$(module_dir "sigs.k8s.io/lws@$LWS_VERSION")"/config/crd/bases/*.yaml "$OUT.partial/lws/"
cp "$(module_dir "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION")"/config/crd/standard/*.yaml "$OUT.partial/gateway-api/"
cp "$(module_dir "sigs.k8s.io/gateway-api-inference-extension@$INFERENCE_EXTENSION_VERSION")"/config/crd/bases/*.yaml "$OUT.partial/inference-extension/"
chmod -R u+w "$OUT.partial"
touch "$OUT.partial/.complete"
rm -rf "$OUT"
mv "$OUT.partial" "$OUT"
echo "$OUT"
