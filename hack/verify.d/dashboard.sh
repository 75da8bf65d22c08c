#!/usr/bin/env bash
# Fails when the chart's Grafana dashboard differs from what
# hack/gen-dashboard.sh generates from hack/gendashboard.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$root/hack/gen-dashboard.sh" "$tmp/metal-ccm.json"
if ! diff -u "$root/deploy/chart/metal-ccm/dashboards/metal-ccm.json" "$tmp/metal-ccm.json"; then
  echo "the chart's dashboard is stale: run hack/gen-dashboard.sh" >&2
  exit 1
fi
