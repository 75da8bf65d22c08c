// Package images builds this repository's Go programs into container images
// for real kubelets that reach no registry: each image is a single-platform
// OCI image archive holding one static binary and no base image, to be
// imported with `ctr -n k8s.io images import FILE` (containerd 1.6 and later).
// Pause is the pod sandbox image (containerd's sandbox_image), Echo the HTTP
// workload, CCM the cloud controller manager.
//
// The archive is an OCI image layout (oci-layout, index.json, blobs/) in a tar,
// not a docker-save tarball. ctr 1.6 names an imported OCI layout image by its
// index entry's io.containerd.image.name annotation, verbatim; only without it
// does it read org.opencontainers.image.ref.name, keeping a full reference
// and turning a bare tag into "import-YYYY-MM-DD:TAG". Both annotations hold
// the full reference here. A docker-save tarball is named right too (its
// RepoTags are normalized), but containerd then writes a Docker manifest of its
// own, so the digest it stores is not the one Build reports.
//
// The name must be the normalized reference (docker.io/library/echo:test):
// ctr does not normalize annotations, and the CRI plugin looks images up by
// the normalized form of what the kubelet asks for, so a pod may say
// "echo:test" but an image imported as "echo:test" is never found.
//
// The binaries, layer and config are internal/imagebuild's, as for the
// release image (make image). Images are reproducible: the binary is built
// with -trimpath and without VCS stamping, and every time in the image and
// the archive is the Unix epoch, so the same sources and toolchain give the
// same digests.
package images
