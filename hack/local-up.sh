#!/usr/bin/env bash
# Starts a local cluster with the CCM (see hack/local/main.go).
#   hack/local-up.sh               run until Ctrl-C (or hack/local-down.sh), then clean up
#   hack/local-up.sh --detach      leave it running; stop it with hack/local-down.sh
#   hack/local-up.sh --real-nodes  as root: real kubelets, containerd and kube-proxy
#                                  in the router lab's node namespaces (foreground only)
#   hack/local-up.sh --l2          as root: three real nodes on one Ethernet segment,
#                                  no router; the node agents announce the
#                                  LoadBalancer addresses with ARP/NDP (foreground only)
# REAL_NODES=1 (also `make run REAL_NODES=1`: make passes command-line variables
# to its recipes' environment) is the same as --real-nodes, and L2=1 (`make run
# L2=1`) the same as --l2.
# The kubeconfig is written to _output/local/kubeconfig.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case "${REAL_NODES:-}" in
  "" | 0 | false | no) ;;
  *) set -- --real-nodes "$@" ;;
esac
case "${L2:-}" in
  "" | 0 | false | no) ;;
  *) set -- --l2 "$@" ;;
esac
"$root/hack/build.sh"
exec "$root/_output/bin/metal-local" up "$@"
