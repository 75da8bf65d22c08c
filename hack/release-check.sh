#!/usr/bin/env bash
# What the release workflow (.github/workflows/release.yaml) does for a tag,
# short of pushing (make release-check): VERSION, the chart's version and
# appVersion and its default image tag agree; CHANGELOG.md has a section for
# VERSION; the image builds for every platform and is what a release must be
# (hack/image check: non-root, no shell, labels); the kubectl plugin builds
# for every platform and says VERSION; the chart packages, lints
# and renders the image VERSION. With TAG=vX.Y.Z (the workflow's git tag),
# the tag must be vVERSION.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/version.sh
. "$root/hack/lib/version.sh"
cd "$root"
echo "release-check: version $VERSION"
if [ -n "${TAG:-}" ] && [ "$TAG" != "v$VERSION" ]; then
  echo "release-check: tag $TAG is not v$VERSION (VERSION)" >&2
  exit 1
fi
check_versions
check_changelog
"$root/hack/changelog.sh" >/dev/null

platforms=${PLATFORMS:-linux/amd64,linux/arm64}
PLATFORMS=$platforms "$root/hack/image.sh"
go run ./hack/image check -layout "${OUTPUT:-$root/_output}/image" -version "$VERSION" -platforms "$platforms"

plugin=$(PLATFORMS=$platforms "$root/hack/plugin.sh")
host="$plugin/kubectl-metal_ccm-$VERSION-$(go env GOOS)-$(go env GOARCH)"
if [ -x "$host" ] && ! "$host" --version | grep -qF "$VERSION"; then
  echo "release-check: $host --version does not say $VERSION" >&2
  exit 1
fi

chart=$("$root/hack/package-chart.sh")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HELM_CACHE_HOME="$tmp/cache" HELM_CONFIG_HOME="$tmp/config" HELM_DATA_HOME="$tmp/data"
"$root/_output/bin/helm" lint --strict --quiet --namespace kube-system "$chart"
images=$("$root/_output/bin/helm" template metal-ccm "$chart" --namespace kube-system --set agent.enabled=true |
  awk '$1 == "image:" { print $2 }' | sort -u)
want="ghcr.io/metal-ccm/metal-cloud-controller-manager:$VERSION"
if [ "$images" != "$want" ]; then
  echo "release-check: the chart renders the images [$images], want $want" >&2
  exit 1
fi
echo "release-check: $VERSION is ready: image ${OUTPUT:-$root/_output}/image, chart $chart, plugin $plugin"
