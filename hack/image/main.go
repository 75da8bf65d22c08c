// Command image builds the release image and pushes it (hack/image.sh and
// hack/push.sh run it; make image, make push).
//
//	go run ./hack/image build -version 0.1.0 -revision COMMIT -created EPOCH -ldflags FLAGS -out _output/image
//	go run ./hack/image push -layout _output/image -image REGISTRY/REPOSITORY [-plain-http]
//	go run ./hack/image check -layout _output/image -version 0.1.0
//
// build writes an OCI image layout holding one image index, named by the
// version: an image per platform (linux/amd64 and linux/arm64), each one
// layer with both binaries, metal-cloud-controller-manager (the entrypoint)
// and metal-node-agent (the chart's agent runs it as its command), built
// from this repository's Go code. The images run as 65532:65532 and have no
// shell or other files; the agent holds CAP_NET_RAW as a permitted file
// capability (docs/l2.md, "Permissions"). The config's labels and the
// index's annotations are the OCI ones: version, revision, source, created
// (from -created, SOURCE_DATE_EPOCH: the same commit gives the same
// digests), title and description.
//
// push pushes the layout's index to IMAGE:VERSION with the credentials of
// the Docker config (docker login) or a credential helper. check verifies a
// layout as a release needs it (make release-check).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/metal-ccm/metal-ccm/internal/imagebuild"
)

const (
	module = "github.com/metal-ccm/metal-ccm"
	binDir = "/usr/local/bin/"
	ccm    = "metal-cloud-controller-manager"
	agent  = "metal-node-agent"
)

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: image build|push|check [flags]")
	}
	switch args[0] {
	case "build":
		return build(ctx, args[1:])
	case "push":
		return push(ctx, args[1:])
	case "check":
		return check(args[1:])
	default:
		return fmt.Errorf("unknown command %q: want build, push or check", args[0])
	}
}

func build(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	version := fs.String("version", "", "the release (the VERSION file); the layout's tag (required)")
	revision := fs.String("revision", "", "the commit")
	source := fs.String("source", "https://github.com/metal-ccm/metal-ccm", "the repository's address (org.opencontainers.image.source)")
	created := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "the image's creation time in seconds since the epoch (default $SOURCE_DATE_EPOCH)")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "the platforms, comma-separated")
	ldflags := fs.String("ldflags", "", "more linker flags (the version's -X flags)")
	dir := fs.String("dir", ".", "the repository's root, where go build runs")
	out := fs.String("out", "_output/image", "the OCI image layout to write (replaced)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" {
		return errors.New("build: -version is required")
	}
	secs, err := strconv.ParseInt(*created, 10, 64)
	if err != nil {
		return fmt.Errorf("build: -created %q: want seconds since the epoch", *created)
	}
	arches, err := imagebuild.Arches(*platforms)
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	createdAt := time.Unix(secs, 0).UTC()
	labels := map[string]string{
		"org.opencontainers.image.title":       ccm,
		"org.opencontainers.image.description": "Cloud-controller-manager and node agent for clusters on machines their owners run themselves",
		"org.opencontainers.image.version":     *version,
		"org.opencontainers.image.revision":    *revision,
		"org.opencontainers.image.source":      *source,
		"org.opencontainers.image.created":     createdAt.Format(time.RFC3339),
	}
	tmp, err := os.MkdirTemp("", "image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	idx, err := imagebuild.BuildIndex(ctx, tmp, imagebuild.IndexOptions{
		Dir: *dir, LDFlags: *ldflags, Arches: arches,
		Binaries: []imagebuild.Binary{
			{Package: module + "/cmd/" + ccm, Path: binDir + ccm},
			{Package: module + "/cmd/" + agent, Path: binDir + agent, Xattrs: imagebuild.CapNetRawPermitted()},
		},
		Config: imagebuild.Config{Created: createdAt, Labels: labels},
	})
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	if err := imagebuild.WriteLayout(*out, idx, *version); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	fmt.Printf("built %s:%s (%v) in %s: %s\n", ccm, *version, arches, time.Since(start).Round(time.Second), digest)
	return nil
}

func push(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	dir := fs.String("layout", "_output/image", "the OCI image layout that build wrote")
	image := fs.String("image", "", "REGISTRY/REPOSITORY to push to, without a tag (required)")
	tag := fs.String("tag", "", "the tag (default: the layout's, the version)")
	plainHTTP := fs.Bool("plain-http", false, "talk HTTP, not HTTPS, to the registry")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *image == "" {
		return errors.New("push: -image is required")
	}
	idx, name, err := imagebuild.ReadLayout(*dir, *tag)
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	ref := *image + ":" + name
	digest, err := imagebuild.Push(ctx, ref, idx, *plainHTTP)
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s@%s\n", ref, digest)
	return nil
}

// check verifies a layout as a release needs it: the index named version
// has one image per platform, each running a binary of its own layer as a
// numeric non-root user, with no file but the binaries (no shell), the OCI
// labels with this version, and the agent's file capability.
func check(args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	dir := fs.String("layout", "_output/image", "the OCI image layout that build wrote")
	version := fs.String("version", "", "the release the layout must hold (required)")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "the platforms it must hold")
	if err := fs.Parse(args); err != nil {
		return err
	}
	arches, err := imagebuild.Arches(*platforms)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	idx, _, err := imagebuild.ReadLayout(*dir, *version)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	want := imagebuild.Expect{
		Arches: arches, Entrypoint: binDir + ccm,
		Files:  map[string]map[string]string{binDir + ccm: nil, binDir + agent: imagebuild.CapNetRawPermitted()},
		Labels: map[string]string{"org.opencontainers.image.version": *version},
	}
	if err := imagebuild.Check(idx, want); err != nil {
		return fmt.Errorf("check %s: %w", *dir, err)
	}
	fmt.Printf("checked %s:%s: %v, non-root, only the two binaries\n", ccm, *version, arches)
	return nil
}
