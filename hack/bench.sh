#!/usr/bin/env bash
# Benchmarks against the real local control plane (docs/performance.md).
#   hack/bench.sh                        the default profile (about 10 minutes on 2 cores)
#   hack/bench.sh -profile smoke         a minute; what `make test` runs
#   hack/bench.sh -profile full          every goal's size (5,000 nodes, 10,000 Services)
#   hack/bench.sh -only join,lb -join-nodes 5000 -pprof
#   BENCH_CCM_CMD="/path/to/other-ccm --flag" hack/bench.sh -out _output/bench-other
#   hack/bench.sh -compare _output/bench/results.json _output/bench-other/results.json
# As root with BIRD 2 (hack/install-deps.sh) a router in network namespaces
# takes part. Writes _output/bench/results.json and results.md and prints the
# table; the logs stay in _output/bench/run/logs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
for arg in "$@"; do
  if [ "$arg" = "-compare" ] || [ "$arg" = "--compare" ]; then
    exec go run ./test/bench/cmd/bench "$@"
  fi
done
"$root/hack/build.sh"
mkdir -p "$root/_output/bench"
go build -o "$root/_output/bench/bench" ./test/bench/cmd/bench
exec "$root/_output/bench/bench" "$@"
