#!/usr/bin/env bash
# Builds the kubectl plugin (make plugin): cmd/kubectl-metal_ccm as one
# static binary per platform, stamped with VERSION and the commit, into
# $OUTPUT/plugin/kubectl-metal_ccm-VERSION-linux-ARCH, with SHA256SUMS. A
# release attaches them (.github/workflows/release.yaml); a user puts one on
# the PATH as kubectl-metal_ccm and runs `kubectl metal-ccm status`
# (docs/operating.md).
#
#   PLATFORMS   comma-separated (default linux/amd64,linux/arm64)
#   OUTPUT      where to write (default _output)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/version.sh
. "$root/hack/lib/version.sh"
out="${OUTPUT:-$root/_output}/plugin"
rm -rf "$out"
mkdir -p "$out"
IFS=, read -ra platforms <<<"${PLATFORMS:-linux/amd64,linux/arm64}"
for p in "${platforms[@]}"; do
  os=${p%/*} arch=${p#*/}
  bin="$out/kubectl-metal_ccm-$VERSION-$os-$arch"
  (cd "$root" && CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w $(version_ldflags)" -o "$bin" ./cmd/kubectl-metal_ccm)
done
(cd "$out" && sha256sum kubectl-metal_ccm-* >SHA256SUMS)
echo "$out"
