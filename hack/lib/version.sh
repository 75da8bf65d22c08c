# Sourced by the scripts that build, package or push a release: the one
# version of the binaries, the image and the chart, and what stamps it.
#
#   VERSION    the repository's VERSION file (0.1.0): the image tag and the
#              chart's version and appVersion; a release's git tag is vVERSION
#   REVISION   the commit (git rev-parse HEAD), "" outside a git checkout
#   SOURCE_DATE_EPOCH
#              the commit's time unless already set: the image's created
#              time, so that a rebuild of one commit gives the same digest
#   version_ldflags
#              prints the linker flags that stamp both into pkg/version
VERSION=$(tr -d ' \n' <"$root/VERSION")
REVISION=$(git -C "$root" rev-parse HEAD 2>/dev/null || true)
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)
fi
export SOURCE_DATE_EPOCH

version_ldflags() {
  local pkg=github.com/metal-ccm/metal-ccm/pkg/version
  echo "-X $pkg.version=$VERSION -X $pkg.revision=$REVISION"
}

# check_versions fails unless the chart's version and appVersion are
# VERSION, and its image tag defaults to the appVersion (values.yaml
# image.tag empty): the image tag, the chart and the binaries cannot drift.
check_versions() {
  local chart="$root/deploy/chart/metal-ccm" v app tag bad=0
  v=$(awk '$1 == "version:" { print $2 }' "$chart/Chart.yaml")
  app=$(awk '$1 == "appVersion:" { gsub(/"/, "", $2); print $2 }' "$chart/Chart.yaml")
  tag=$(awk '/^image:/ { in_image = 1; next } /^[^ #]/ { in_image = 0 }
             in_image && $1 == "tag:" { gsub(/"/, "", $2); print $2 }' "$chart/values.yaml")
  if [ "$v" != "$VERSION" ] || [ "$app" != "$VERSION" ]; then
    echo "deploy/chart/metal-ccm/Chart.yaml: version $v, appVersion $app; VERSION is $VERSION: set both to it" >&2
    bad=1
  fi
  if [ -n "$tag" ]; then
    echo "deploy/chart/metal-ccm/values.yaml: image.tag is \"$tag\"; leave it empty (the chart's appVersion, $VERSION)" >&2
    bad=1
  fi
  return "$bad"
}

# check_changelog fails unless CHANGELOG.md has a section for VERSION
# ("## [VERSION] - DATE" or "## VERSION").
check_changelog() {
  if ! grep -Eq "^## \[?$(printf '%s' "$VERSION" | sed 's/\./\\./g')\]?( |$)" "$root/CHANGELOG.md"; then
    echo "CHANGELOG.md has no section \"## [$VERSION] - DATE\"" >&2
    return 1
  fi
}
