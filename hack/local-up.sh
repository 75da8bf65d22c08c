#!/usr/bin/env bash
# Starts a local cluster with the CCM (see hack/local/main.go).
#   hack/local-up.sh            run until Ctrl-C, then clean up
#   hack/local-up.sh --detach   leave it running; stop it with hack/local-down.sh
# The kubeconfig is written to _output/local/kubeconfig.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/hack/build.sh"
exec "$root/_output/bin/metal-local" up "$@"
