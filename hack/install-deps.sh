#!/usr/bin/env bash
# Installs what the tests need beyond Go: nothing yet for unit and integration
# tests, which build their own binaries (hack/build.sh). Safe to run again.
set -euo pipefail
command -v go >/dev/null || { echo "Go 1.26 is required (https://go.dev/dl)"; exit 1; }

# The BGP tests (pkg/bgp, test/netlab) run a real router in network
# namespaces: BIRD 2, and FRR for the tests that run against both; they skip
# without root or without the router.
install_routers() {
	local pkgs=()
	if ! command -v bird >/dev/null && [ ! -x /usr/sbin/bird ]; then
		pkgs+=(bird2 iproute2 curl)
	fi
	if [ ! -x /usr/lib/frr/bgpd ]; then
		pkgs+=(frr)
	fi
	[ "${#pkgs[@]}" -gt 0 ] || return 0

	# The tests run their own FRR daemons (own config, sockets and
	# namespace), never the system's FRR service: keep the package's init
	# script from starting one, unless a policy-rc.d already decides.
	local policy=/usr/sbin/policy-rc.d
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		trap 'rm -f /usr/sbin/policy-rc.d' EXIT
	fi
	echo "Installing ${pkgs[*]} for the BGP tests ..."
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "${pkgs[@]}"
}
if [ "$(id -u)" -eq 0 ]; then
	install_routers
fi
