#!/usr/bin/env bash
# golangci-lint, pinned in its own tools module (hack/tools/lint/go.mod) so that
# its dependencies never meet the Kubernetes ones of hack/tools/go.mod. The
# binary is built into _output/bin and rebuilt only when the pin or the Go
# toolchain changes (the stamp holds their hash), as hack/build.sh does for the
# control plane. The checks are in .golangci.yml.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/_output/bin"
mkdir -p "$bin"
lint="$bin/golangci-lint"
stamp="$bin/.golangci-lint-stamp"
want=$(cat "$root/hack/tools/lint/go.mod" "$root/hack/tools/lint/go.sum" "$(command -v go)" | sha256sum | cut -d' ' -f1)
have=$(cat "$stamp" 2>/dev/null || true)
if [ "$want" != "$have" ] || [ ! -x "$lint" ]; then
  echo "Building golangci-lint (a few minutes the first time) ..."
  start=$(date +%s)
  (cd "$root/hack/tools/lint" && go build -o "$lint" github.com/golangci/golangci-lint/v2/cmd/golangci-lint)
  echo "$want" > "$stamp"
  echo "Built golangci-lint in $(( $(date +%s) - start ))s."
fi
cd "$root"
"$lint" version
# Others may lint the same tree at once: wait for them rather than fail.
exec "$lint" run --timeout 15m --allow-serial-runners ./...
