#!/usr/bin/env bash
# Fails when the chart's version, appVersion or default image tag differ from
# VERSION, the one version of the binaries, the image and the chart
# (hack/lib/version.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/version.sh
. "$root/hack/lib/version.sh"
check_versions
