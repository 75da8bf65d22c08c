// Package version is the release of this build: one version for the
// binaries, the image and the chart, kept in the repository's VERSION file.
// The build scripts (hack/build.sh, hack/image.sh) stamp it and the commit
// into the binaries with the linker flags of hack/lib/version.sh:
//
//	-X github.com/metal-ccm/metal-ccm/pkg/version.version=$(cat VERSION)
//	-X github.com/metal-ccm/metal-ccm/pkg/version.revision=COMMIT
//
// A plain go build reports Dev.
package version

import (
	"fmt"
	"runtime"
)

// Dev is the version of a build that was not stamped.
const Dev = "0.0.0-dev"

// Set by the linker (-X); see the package comment.
var (
	version  = Dev
	revision = ""
)

// Version is the release this binary was built as: VERSION's contents, such
// as 0.1.0 (also the image tag and the chart's appVersion), or Dev.
func Version() string { return version }

// Revision is the commit the binary was built from, or "" when unknown.
func Revision() string { return revision }

// String is what --version prints after the program's name: the version,
// the commit when known, and the Go toolchain.
func String() string {
	rev := revision
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf("%s (revision %s, %s)", version, rev, runtime.Version())
}
