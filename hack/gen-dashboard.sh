#!/usr/bin/env bash
# Regenerates the chart's Grafana dashboard from the code in hack/gendashboard.
# Usage: hack/gen-dashboard.sh [FILE] writes FILE instead
# (hack/verify.d/dashboard.sh compares).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-"$root/deploy/chart/metal-ccm/dashboards/metal-ccm.json"}
cd "$root"
go run ./hack/gendashboard -out "$out"
