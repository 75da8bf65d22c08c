#!/usr/bin/env bash
# Pushes a release (make push IMAGE=REGISTRY/REPOSITORY): builds the image
# (hack/image.sh) and pushes it as IMAGE:VERSION, then packages the chart
# with IMAGE as its image.repository (hack/package-chart.sh) and pushes it
# with Helm to CHART_REPO, as CHART_REPO/metal-ccm:VERSION.
#
#   IMAGE       REGISTRY/REPOSITORY of the image, without a tag (required)
#   CHART_REPO  oci://REGISTRY/PATH of the chart (default oci://IMAGE's
#               parent/charts: IMAGE=ghcr.io/ORG/metal-cloud-controller-manager
#               gives oci://ghcr.io/ORG/charts)
#   PLAIN_HTTP  1: the registry speaks HTTP, not HTTPS (a lab registry)
#   PLATFORMS   as for hack/image.sh
#   OUTPUT      where the image layout and the chart package go (default _output)
#
# Credentials: the image's from the Docker config (docker login) or a
# credential helper; the chart's from `helm registry login`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
: "${IMAGE:?set IMAGE=REGISTRY/REPOSITORY, such as ghcr.io/ORG/metal-cloud-controller-manager}"
case "$IMAGE" in
  */*) ;;
  *) echo "push: IMAGE=$IMAGE: want REGISTRY/REPOSITORY" >&2; exit 1 ;;
esac
case "${IMAGE##*/}" in
  *:*|*@*) echo "push: IMAGE=$IMAGE: no tag or digest (the tag is VERSION)" >&2; exit 1 ;;
esac
chart_repo=${CHART_REPO:-oci://${IMAGE%/*}/charts}
image_flags=() helm_flags=()
if [ "${PLAIN_HTTP:-0}" = 1 ]; then
  image_flags=(-plain-http) helm_flags=(--plain-http)
fi

"$root/hack/image.sh"
(cd "$root" && go run ./hack/image push -layout "${OUTPUT:-$root/_output}/image" -image "$IMAGE" "${image_flags[@]}")
chart=$(IMAGE=$IMAGE "$root/hack/package-chart.sh")
"$root/_output/bin/helm" push "$chart" "$chart_repo" "${helm_flags[@]}"
