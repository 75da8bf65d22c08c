#!/usr/bin/env bash
# Prints CHANGELOG.md's section for VERSION (or the version given), without
# its heading: the release notes of the release workflow. Fails when there
# is none.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/version.sh
. "$root/hack/lib/version.sh"
v=${1:-$VERSION}
notes=$(awk -v v="$v" '
  /^## / { if (found) exit; h = $2; gsub(/[][]/, "", h); if (h == v) { found = 1; next } }
  found { print }' "$root/CHANGELOG.md")
if [ -z "$(echo "$notes" | tr -d '[:space:]')" ]; then
  echo "changelog: CHANGELOG.md has no section for $v" >&2
  exit 1
fi
echo "$notes"
