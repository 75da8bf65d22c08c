#!/usr/bin/env bash
# Builds the Helm pinned in hack/tools/helm/go.mod into _output/bin/helm. Helm
# has its own tools module so that its dependencies never meet the Kubernetes
# ones of hack/tools/go.mod or of the main module. The build is skipped while
# the pin and the Go toolchain are unchanged (the stamp holds their hash), as
# hack/build.sh does for the control plane. The chart test
# (test/integration/chart_test.go) and hack/gen-manifests.sh use this binary.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mod="$root/hack/tools/helm"
# The module version becomes `helm version`'s, as in a release build.
version=$(cd "$mod" && go list -m -f '{{.Version}}' helm.sh/helm/v4)
# shellcheck source=lib/pinned.sh
. "$root/hack/lib/pinned.sh"
build_pinned helm "$mod" -- -ldflags "-X helm.sh/helm/v4/internal/version.version=$version" \
  -o "$root/_output/bin/helm" helm.sh/helm/v4/cmd/helm
