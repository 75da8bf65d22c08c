#!/usr/bin/env bash
# Packages the chart (deploy/chart/metal-ccm) into
# $OUTPUT/chart/metal-ccm-VERSION.tgz (OUTPUT default _output) after checking that its version and
# appVersion are VERSION. With IMAGE=REGISTRY/REPOSITORY, the packaged
# chart's image.repository defaults to it (the image make push pushes
# there), so that `helm install oci://...` runs that image with no --set;
# without, it keeps the published image. Prints the package's path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/version.sh
. "$root/hack/lib/version.sh"
check_versions
"$root/hack/build-helm.sh" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HELM_CACHE_HOME="$tmp/cache" HELM_CONFIG_HOME="$tmp/config" HELM_DATA_HOME="$tmp/data"
cp -r "$root/deploy/chart/metal-ccm" "$tmp/metal-ccm"
values="$tmp/metal-ccm/values.yaml"
if [ -n "${IMAGE:-}" ]; then
  # The repository: line of the top-level image: block.
  awk -v image="$IMAGE" '
    /^image:/ { in_image = 1; print; next }
    /^[^ #]/ { in_image = 0 }
    in_image && $1 == "repository:" && !done { sub(/repository:.*/, "repository: " image); done = 1 }
    { print }' "$values" >"$values.new"
  mv "$values.new" "$values"
  got=$("$root/_output/bin/helm" show values "$tmp/metal-ccm" | awk '/^image:/ { i = 1 } i && $1 == "repository:" { print $2; exit }')
  if [ "$got" != "$IMAGE" ]; then
    echo "package-chart: image.repository is $got after setting it to $IMAGE" >&2
    exit 1
  fi
fi
dest="${OUTPUT:-$root/_output}/chart"
mkdir -p "$dest"
"$root/_output/bin/helm" package "$tmp/metal-ccm" --destination "$dest" >&2
echo "$dest/metal-ccm-$VERSION.tgz"
