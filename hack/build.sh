#!/usr/bin/env bash
# Builds the control-plane binaries pinned in hack/tools/go.mod (etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, and kubelet and
# kube-proxy for the real-node tests) and this repository's
# binaries into _output/bin. The control-plane build is skipped while its
# inputs are unchanged (the stamp holds their hash), so a second run is fast.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/_output/bin"
mkdir -p "$bin"

# shellcheck source=lib/pinned.sh
. "$root/hack/lib/pinned.sh"
# The Kubernetes binaries report the version they are built from, as a
# release does (helm install checks a chart's kubeVersion against the API
# server's): go build alone stamps v0.0.0-master.
kver=$(cd "$root/hack/tools" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
kldflags="-X k8s.io/component-base/version.gitVersion=$kver -X k8s.io/component-base/version.gitMajor=$(echo "$kver" | cut -d. -f1 | tr -d v) -X k8s.io/component-base/version.gitMinor=$(echo "$kver" | cut -d. -f2)"
BINARIES="etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy" build_pinned tools "$root/hack/tools" -- -ldflags "$kldflags" -o "$bin/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kubectl \
  k8s.io/kubernetes/cmd/kubelet \
  k8s.io/kubernetes/cmd/kube-proxy \
  ./etcd -- "$root/hack/tools/etcd/main.go" "$root/hack/build.sh"

# Helm, for the chart's test and the generated manifests (its own tools module).
"$root/hack/build-helm.sh"

# MetalLB's released controller and CRDs, for the migration e2e test (its own
# tools module; minutes when cold, then skipped by its stamp).
"$root/hack/build-metallb.sh"

# This repository's binaries, stamped with VERSION and the commit (--version),
# without the symbol table and DWARF (-s -w) as the image's are: the node
# agent's size is a goal (docs/performance.md, scenario 0b), and panics and
# profiles do not need them. Not -trimpath: it would compile every package
# again beside go test's builds.
# shellcheck source=lib/version.sh
. "$root/hack/lib/version.sh"
(cd "$root" && go build -ldflags "-s -w $(version_ldflags)" -o "$bin/" ./cmd/... && go build -o "$bin/metal-local" ./hack/local)
