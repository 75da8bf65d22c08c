#!/usr/bin/env bash
# Installs what the tests need beyond Go: nothing yet for unit and integration
# tests, which build their own binaries (hack/build.sh). Safe to run again.
set -euo pipefail
command -v go >/dev/null || { echo "Go 1.26 is required (https://go.dev/dl)"; exit 1; }

# The BGP tests (pkg/bgp, test/netlab) run a real BIRD 2 router in network
# namespaces; they skip without root or without BIRD.
if [ "$(id -u)" -eq 0 ] && ! command -v bird >/dev/null && [ ! -x /usr/sbin/bird ]; then
	echo "Installing BIRD 2, iproute2 and curl for the BGP tests ..."
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y bird2 iproute2 curl
fi
