#!/usr/bin/env bash
# Static checks: gofmt and go vet here, then every hack/verify.d/*.sh in order
# (linters, generated files that must be up to date, ...). Fails on the first
# failing check, after printing what it found.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
echo "verify: gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
echo "verify: go vet"
go vet ./...
for check in "$root"/hack/verify.d/*.sh; do
  [ -e "$check" ] || continue
  echo "verify: $(basename "$check")"
  bash "$check"
done
echo "verify: all checks passed"
