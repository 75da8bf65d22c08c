#!/usr/bin/env bash
# Builds the control-plane binaries pinned in hack/tools/go.mod (etcd,
# kube-apiserver, kube-controller-manager, kubectl) and this repository's
# binaries into _output/bin. The control-plane build is skipped while its
# inputs are unchanged (the stamp holds their hash), so a second run is fast.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/_output/bin"
mkdir -p "$bin"

tools=(etcd kube-apiserver kube-controller-manager kubectl)
stamp="$bin/.tools-stamp"
want=$(cat "$root/hack/tools/go.mod" "$root/hack/tools/go.sum" "$root/hack/tools/etcd/main.go" "$(command -v go)" | sha256sum | cut -d' ' -f1)
have=$(cat "$stamp" 2>/dev/null || true)
missing=0
for t in "${tools[@]}"; do [ -x "$bin/$t" ] || missing=1; done
if [ "$want" != "$have" ] || [ "$missing" = 1 ]; then
  echo "Building etcd, kube-apiserver, kube-controller-manager, kubectl (a few minutes the first time) ..."
  start=$(date +%s)
  (cd "$root/hack/tools" && go build -o "$bin/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kubectl \
    ./etcd)
  echo "$want" > "$stamp"
  echo "Built the control plane in $(( $(date +%s) - start ))s."
fi

# Helm, for the chart's test and the generated manifests (its own tools module).
"$root/hack/build-helm.sh"

(cd "$root" && go build -o "$bin/" ./cmd/... && go build -o "$bin/metal-local" ./hack/local)
