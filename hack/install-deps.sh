#!/usr/bin/env bash
# Installs what the tests need beyond Go: nothing yet for unit and integration
# tests, which build their own binaries (hack/build.sh). Safe to run again.
set -euo pipefail
command -v go >/dev/null || { echo "Go 1.26 is required (https://go.dev/dl)"; exit 1; }

# The BGP tests (pkg/bgp, test/netlab) run a real router in network
# namespaces: BIRD 2, and FRR for the tests that run against both; they skip
# without root or without the router. The real-node tests (test/e2e,
# test/framework/realnode.go) run a containerd, kubelet and kube-proxy per
# node namespace: containerd (with ctr), runc, the CNI bridge and host-local
# plugins (/usr/lib/cni) and nftables (kube-proxy's mode runs nft). The test
# process relays the API server into the node namespaces itself, and
# kube-proxy clears conntrack entries over netlink: no socat, no conntrack.
# kubelet and kube-proxy themselves come from hack/build.sh. The IPMI
# power-state source's tests run OpenIPMI's ipmi_sim and ipmitool. The
# release test runs Distribution's registry (docker-registry).
missing_packages() {
	if ! command -v bird >/dev/null && [ ! -x /usr/sbin/bird ]; then
		echo bird2 iproute2 curl
	fi
	[ -x /usr/lib/frr/bgpd ] || echo frr
	command -v containerd >/dev/null || echo containerd
	command -v runc >/dev/null || echo runc
	[ -x /usr/lib/cni/bridge ] || [ -x /opt/cni/bin/bridge ] || echo containernetworking-plugins
	command -v nft >/dev/null || echo nftables
	# The IPMI power-state source's tests run a real BMC (OpenIPMI's
	# ipmi_sim) on loopback, and ipmitool as an independent client.
	command -v ipmi_sim >/dev/null || echo openipmi
	command -v ipmitool >/dev/null || echo ipmitool
	# The release test pushes the image and the chart to a real OCI
	# registry (the CNCF Distribution registry) that it starts on a lab
	# address, and the real nodes pull from it.
	[ -x /usr/bin/docker-registry ] || echo docker-registry
}

install_packages() {
	local pkgs
	read -r -a pkgs <<<"$(missing_packages | tr '\n' ' ')"
	[ "${#pkgs[@]}" -gt 0 ] || return 0

	# The tests run their own FRR daemons and containerds (own config,
	# sockets and namespace), never the system's services: keep the
	# packages' init scripts from starting them, unless a policy-rc.d
	# already decides.
	local policy=/usr/sbin/policy-rc.d
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod 755 "$policy"
		trap 'rm -f /usr/sbin/policy-rc.d' EXIT
	fi
	echo "Installing ${pkgs[*]} for the BGP and real-node tests ..."
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
}
if [ "$(id -u)" -eq 0 ]; then
	install_packages
fi
