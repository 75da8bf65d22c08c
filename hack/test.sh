#!/usr/bin/env bash
# Unit and integration tests. Integration tests run the real etcd,
# kube-apiserver and kube-controller-manager that hack/build.sh builds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
"$root/hack/install-deps.sh"
"$root/hack/build.sh"
echo "Running unit and integration tests ..."
go test -count=1 -timeout 30m ./... 2>&1 | tee "$root/_output/test.log"
# Further bounded test steps (fuzzing, short chaos and benchmark profiles, ...).
for step in "$root"/hack/test.d/*.sh; do
  [ -e "$step" ] || continue
  echo "test: $(basename "$step")"
  bash "$step"
done
