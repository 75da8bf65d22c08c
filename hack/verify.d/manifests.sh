#!/usr/bin/env bash
# Fails when deploy/rbac.yaml, configmap.yaml, daemonset.yaml or node-agent/agent.yaml differ from
# what hack/gen-manifests.sh renders from the chart, and when `helm lint`
# finds a problem in the chart (with the default values and each example).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$root/hack/gen-manifests.sh" "$tmp"
stale=0
for f in rbac.yaml configmap.yaml daemonset.yaml node-agent/agent.yaml; do
  if ! diff -u "$root/deploy/$f" "$tmp/$f"; then
    stale=1
  fi
done
if [ "$stale" = 1 ]; then
  echo "deploy/ is stale: run hack/gen-manifests.sh" >&2
  exit 1
fi
export HELM_CACHE_HOME="$tmp/cache" HELM_CONFIG_HOME="$tmp/config" HELM_DATA_HOME="$tmp/data"
chart="$root/deploy/chart/metal-ccm"
"$root/_output/bin/helm" lint --strict --quiet --namespace kube-system "$chart"
for values in "$chart"/examples/*.yaml; do
  "$root/_output/bin/helm" lint --strict --quiet --namespace kube-system -f "$values" "$chart"
done
