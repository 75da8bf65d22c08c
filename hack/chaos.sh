#!/usr/bin/env bash
# make chaos: the full profile of the fault-injection suite (test/chaos)
# against the real control plane and, as root, a BIRD router in network
# namespaces. It prints the results table and writes it into
# docs/reliability.md. `make test` runs the short profile of the same tests.
#   CHAOS_PROFILE=short hack/chaos.sh   a quick run (the table is written too)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
"$root/hack/install-deps.sh"
"$root/hack/build.sh"
mkdir -p "$root/_output"
echo "Running the chaos suite (profile ${CHAOS_PROFILE:-full}; the full one takes about 10 minutes) ..."
CHAOS_PROFILE=${CHAOS_PROFILE:-full} CHAOS_REPORT="$root/docs/reliability.md" \
  go test -count=1 -timeout 90m -v ./test/chaos/ 2>&1 | tee "$root/_output/chaos.log"
