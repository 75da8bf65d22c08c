package images

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/metal-ccm/metal-ccm/internal/imagebuild"
)

// Module is this repository's module path, the prefix of the packages below.
const Module = "github.com/metal-ccm/metal-ccm"

// Options says what Build builds and where it writes it.
type Options struct {
	// Package is the main package: an import path of this module (then
	// Dir may be any directory in it), or a "./" path relative to Dir.
	Package string
	// Ref names the image: a normalized reference with a tag, such as
	// Ref("echo"). See checkRef.
	Ref string
	// Binary is the binary's absolute path in the image, also the entrypoint.
	Binary string
	// Out is the archive file to write (replaced if it exists).
	Out string
	// Dir is where go build runs: "" is the current directory.
	Dir string
	// Arch is the GOARCH of the binary and the image's platform: "" is the
	// machine's.
	Arch string
	// Extra are more binaries in the image's layer (not entrypoints).
	Extra []Extra
}

// Extra is one more binary of an image: Package built to Binary, with
// extended attributes Xattrs (such as imagebuild.CapNetRawPermitted).
type Extra struct {
	Package string
	Binary  string
	Xattrs  map[string]string
}

// Result is what Build wrote.
type Result struct {
	Path   string  // the archive
	Ref    string  // the image's name once imported
	Digest v1.Hash // the manifest's digest: what containerd stores as the image's target
	ID     v1.Hash // the config's digest: the image ID crictl and the kubelet show
}

// Pause builds cmd/pause, the pod sandbox image (containerd's sandbox_image),
// into out.
func Pause(out string) Options {
	return Options{Package: Module + "/test/images/cmd/pause", Ref: Ref("pause"), Binary: "/bin/pause", Out: out}
}

// Echo builds cmd/echo, the HTTP workload that answers with its pod's
// identity, into out.
func Echo(out string) Options {
	return Options{Package: Module + "/test/images/cmd/echo", Ref: Ref("echo"), Binary: "/bin/echo", Out: out}
}

// CCM builds the cloud controller manager into out at the release image's
// paths (hack/image: the node agent beside the manager), user and
// entrypoint, for a single platform and without the version stamped.
func CCM(out string) Options {
	const name, agent = "metal-cloud-controller-manager", "metal-node-agent"
	return Options{Package: Module + "/cmd/" + name, Ref: Ref(name), Binary: "/usr/local/bin/" + name, Out: out,
		// The agent holds CAP_NET_RAW as a permitted file capability, as in
		// the release image (hack/image), for L2 pools.
		Extra: []Extra{{Package: Module + "/cmd/" + agent, Binary: "/usr/local/bin/" + agent, Xattrs: imagebuild.CapNetRawPermitted()}}}
}

// BuildCCM builds the cloud controller manager's image into out.
func BuildCCM(ctx context.Context, out string) (Result, error) {
	return Build(ctx, CCM(out))
}

// Build compiles opts.Package into a static Linux binary and writes a
// single-platform OCI image archive of it to opts.Out: one layer holding only
// the binaries, run as imagebuild.User with the binary as entrypoint.
func Build(ctx context.Context, opts Options) (Result, error) {
	if err := opts.check(); err != nil {
		return Result{}, fmt.Errorf("build image: %w", err)
	}
	res, err := buildImage(ctx, opts)
	if err != nil {
		return Result{}, fmt.Errorf("build image %s: %w", opts.Ref, err)
	}
	return res, nil
}

// buildImage builds and packs the image opts say, in a temporary directory.
func buildImage(ctx context.Context, opts Options) (Result, error) {
	arch := opts.Arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	tmp, err := os.MkdirTemp("", "images-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(tmp)
	bins := []imagebuild.Binary{{Package: opts.Package, Path: opts.Binary}}
	for _, e := range opts.Extra {
		bins = append(bins, imagebuild.Binary{Package: e.Package, Path: e.Binary, Xattrs: e.Xattrs})
	}
	img, err := imagebuild.Build(ctx, opts.Dir, tmp, "", bins, imagebuild.Config{
		Arch: arch, Created: imagebuild.Epoch, CreatedBy: "go build " + opts.Package,
	})
	if err != nil {
		return Result{}, err
	}
	dir := filepath.Join(tmp, "layout")
	if err := writeLayout(dir, img, opts.Ref, arch); err != nil {
		return Result{}, err
	}
	if err := imagebuild.TarDir(dir, opts.Out); err != nil {
		return Result{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return Result{}, err
	}
	id, err := img.ConfigName()
	if err != nil {
		return Result{}, err
	}
	return Result{Path: opts.Out, Ref: opts.Ref, Digest: digest, ID: id}, nil
}

// check rejects options Build cannot honour, before anything is compiled.
func (o Options) check() error {
	var errs []error
	if o.Package == "" {
		errs = append(errs, errors.New("no package"))
	}
	if o.Out == "" {
		errs = append(errs, errors.New("no output file"))
	}
	seen := map[string]bool{}
	for _, b := range append([]string{o.Binary}, extraBinaries(o.Extra)...) {
		if !path.IsAbs(b) || path.Clean(b) != b || strings.HasSuffix(b, "/") {
			errs = append(errs, fmt.Errorf("binary path %q: not a clean absolute file path", b))
		}
		if seen[b] {
			errs = append(errs, fmt.Errorf("binary path %q: given twice", b))
		}
		seen[b] = true
	}
	for _, e := range o.Extra {
		if e.Package == "" {
			errs = append(errs, fmt.Errorf("extra binary %q: no package", e.Binary))
		}
	}
	if err := checkRef(o.Ref); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func extraBinaries(extra []Extra) []string {
	out := make([]string, len(extra))
	for i, e := range extra {
		out[i] = e.Binary
	}
	return out
}

// BuildNodeImages builds the images every real node imports, the pause and
// echo images, as OCI archives in dir: the archives, and the pause image's
// reference (the node's sandbox image).
func BuildNodeImages(ctx context.Context, dir string) (archives []string, pauseRef string, err error) {
	for _, o := range []Options{Pause(filepath.Join(dir, "pause.tar")), Echo(filepath.Join(dir, "echo.tar"))} {
		res, err := Build(ctx, o)
		if err != nil {
			return nil, "", err
		}
		archives = append(archives, res.Path)
	}
	return archives, Ref("pause"), nil
}
