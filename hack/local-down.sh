#!/usr/bin/env bash
# Stops the local cluster by what `hack/local-up.sh` recorded in
# _output/local/pids: a foreground run (real nodes and router lab included) is
# asked to stop and clean up itself (SIGTERM to its PID); a detached one is
# stopped process by process, by PID.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$root/_output/bin/metal-local" ]; then
  (cd "$root" && go build -o "$root/_output/bin/metal-local" ./hack/local)
fi
exec "$root/_output/bin/metal-local" down
