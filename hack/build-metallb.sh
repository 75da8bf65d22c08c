#!/usr/bin/env bash
# Builds MetalLB's controller, the release pinned in hack/tools/metallb/go.mod,
# into _output/bin/metallb-controller, and copies that release's CRDs
# (config/crd/bases) into _output/metallb/crd. The MetalLB migration e2e test
# (test/e2e/metallb_test.go) runs them against the real API server. MetalLB
# has its own tools module: its Kubernetes libraries are older than ours. The
# build (minutes when cold) is skipped while the pin and the Go toolchain are
# unchanged, as hack/build.sh does for the control plane.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mod="$root/hack/tools/metallb"
# shellcheck source=lib/pinned.sh
. "$root/hack/lib/pinned.sh"
BINARIES=metallb-controller build_pinned metallb "$mod" -- \
  -o "$root/_output/bin/metallb-controller" go.universe.tf/metallb/controller
crd="$root/_output/metallb/crd"
rm -rf "$crd" && mkdir -p "$crd"
cp "$(cd "$mod" && go list -m -f '{{.Dir}}' go.universe.tf/metallb)"/config/crd/bases/*.yaml "$crd/"
chmod u+w "$crd"/*.yaml
# The release's BGPPeer CRD declares the ASNs `format: int32` with
# `maximum: 4294967295`; the Kubernetes 1.37 API server rejects every
# BGPPeer against that schema ("Maximum boundary value must be of type
# integer with format int32"). The copy says int64, as the values are.
perl -0pi -e 's/format: int32(\n\s+maximum: 4294967295)/format: int64$1/g' "$crd/metallb.io_bgppeers.yaml"
