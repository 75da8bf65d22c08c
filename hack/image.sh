#!/usr/bin/env bash
# Builds the release image (make image): an OCI image index for linux/amd64
# and linux/arm64 of both binaries, metal-cloud-controller-manager and
# metal-node-agent, stamped with VERSION and the commit, written as an OCI
# image layout to $OUTPUT/image (tag VERSION) by hack/image. No container
# engine is needed. Its created time is SOURCE_DATE_EPOCH (the commit's time
# by default), so a rebuild of one commit gives the same digest.
#
#   PLATFORMS   comma-separated (default linux/amd64,linux/arm64)
#   SOURCE_URL  org.opencontainers.image.source (default the project's repository)
#   OUTPUT      where to write (default _output)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/version.sh
. "$root/hack/lib/version.sh"
cd "$root"
go run ./hack/image build \
  -version "$VERSION" -revision "$REVISION" -created "$SOURCE_DATE_EPOCH" \
  -platforms "${PLATFORMS:-linux/amd64,linux/arm64}" \
  -source "${SOURCE_URL:-https://github.com/metal-ccm/metal-ccm}" \
  -ldflags "$(version_ldflags)" -out "${OUTPUT:-$root/_output}/image"
