#!/usr/bin/env bash
# Regenerates docs/reference/ from the code (hack/gendocs): cloud-config
# fields from pkg/config/types.go, Service annotations from
# pkg/annotation (Event reasons from pkg/metal/reasons.go), metrics from pkg/metal and the protocols, and flags from the --help
# of a manager built from this tree. Usage: hack/gen-docs.sh [DIR] writes into
# DIR instead (hack/verify.d/docs.sh compares).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-"$root/docs/reference"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
go build -o "$tmp/metal-cloud-controller-manager" ./cmd/metal-cloud-controller-manager
go run ./hack/gendocs -root "$root" -ccm "$tmp/metal-cloud-controller-manager" -out "$out"
