// Package imagebuild makes container images of this repository's Go
// programs without a container engine: a static binary built with go build,
// one layer holding only the binaries (no shell, no base image), run as a
// numeric non-root user. test/images uses it for the test images that real
// nodes import, and hack/image for the release image (make image).
//
// Images are reproducible: binaries are built with -trimpath and without VCS
// stamping, and every time in a layer is the Unix epoch; the image's created
// time is the caller's (the epoch, or SOURCE_DATE_EPOCH for a release), so
// the same sources, toolchain and time give the same digests.
package imagebuild
