#!/usr/bin/env bash
# Installs what the tests need beyond Go: nothing yet for unit and integration
# tests, which build their own binaries (hack/build.sh). Safe to run again.
set -euo pipefail
command -v go >/dev/null || { echo "Go 1.26 is required (https://go.dev/dl)"; exit 1; }
