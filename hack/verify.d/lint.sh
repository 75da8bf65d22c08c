#!/usr/bin/env bash
# golangci-lint, pinned in its own tools module (hack/tools/lint/go.mod) so that
# its dependencies never meet the Kubernetes ones of hack/tools/go.mod. The
# binary is built into _output/bin and rebuilt only when the pin or the Go
# toolchain changes (the stamp holds their hash), as hack/build.sh does for the
# control plane. The checks are in .golangci.yml.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
lint="$root/_output/bin/golangci-lint"
# shellcheck source=../lib/pinned.sh
. "$root/hack/lib/pinned.sh"
build_pinned golangci-lint "$root/hack/tools/lint" -- -o "$lint" github.com/golangci/golangci-lint/v2/cmd/golangci-lint
cd "$root"
"$lint" version
# Others may lint the same tree at once: wait for them rather than fail.
exec "$lint" run --timeout 15m --allow-serial-runners ./...
