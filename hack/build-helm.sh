#!/usr/bin/env bash
# Builds the Helm pinned in hack/tools/helm/go.mod into _output/bin/helm. Helm
# has its own tools module so that its dependencies never meet the Kubernetes
# ones of hack/tools/go.mod or of the main module. The build is skipped while
# the pin and the Go toolchain are unchanged (the stamp holds their hash), as
# hack/build.sh does for the control plane. The chart test
# (test/integration/chart_test.go) and hack/gen-manifests.sh use this binary.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/_output/bin"
mkdir -p "$bin"
mod="$root/hack/tools/helm"
stamp="$bin/.helm-stamp"
want=$(cat "$mod/go.mod" "$mod/go.sum" "$(command -v go)" | sha256sum | cut -d' ' -f1)
have=$(cat "$stamp" 2>/dev/null || true)
if [ "$want" != "$have" ] || [ ! -x "$bin/helm" ]; then
  echo "Building helm (a few minutes the first time) ..."
  start=$(date +%s)
  # The module version becomes `helm version`'s, as in a release build.
  version=$(cd "$mod" && go list -m -f '{{.Version}}' helm.sh/helm/v4)
  (cd "$mod" && go build \
    -ldflags "-X helm.sh/helm/v4/internal/version.version=$version" \
    -o "$bin/helm" helm.sh/helm/v4/cmd/helm)
  echo "$want" > "$stamp"
  echo "Built helm $version in $(( $(date +%s) - start ))s."
fi
