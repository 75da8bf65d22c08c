#!/usr/bin/env bash
# Stops the cluster that `hack/local-up.sh --detach` left running, by the PIDs
# it recorded in _output/local/pids.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$root/_output/bin/metal-local" ]; then
  (cd "$root" && go build -o "$root/_output/bin/metal-local" ./hack/local)
fi
exec "$root/_output/bin/metal-local" down
