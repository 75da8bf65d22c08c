package imagebuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// AnnotationRefName names an image of an OCI layout: its tag.
const AnnotationRefName = "org.opencontainers.image.ref.name"

// IndexOptions say what BuildIndex builds.
type IndexOptions struct {
	// Dir is where go build runs ("" is the current directory).
	Dir string
	// LDFlags are more linker flags (the version's -X flags).
	LDFlags string
	// Binaries go into every platform's image; the first is the
	// entrypoint.
	Binaries []Binary
	// Arches are the linux architectures (GOARCH), one image each.
	Arches []string
	// Config is every image's config; its Arch is set per image. Its
	// Labels are also the index's annotations.
	Config Config
}

// BuildIndex builds one image per architecture and returns the OCI image
// index of them, each entry marked with its platform (the runtime pulls
// its own). Binaries and layers are written under tmp, a directory of the
// caller's that must stay until the index is written or pushed.
func BuildIndex(ctx context.Context, tmp string, o IndexOptions) (v1.ImageIndex, error) {
	if len(o.Arches) == 0 {
		return nil, fmt.Errorf("image index: no architecture")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range o.Arches {
		img, err := buildArch(ctx, filepath.Join(tmp, arch), o, arch)
		if err != nil {
			return nil, fmt.Errorf("image for linux/%s: %w", arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}},
		})
	}
	if len(o.Config.Labels) > 0 {
		annotated, ok := mutate.Annotations(idx, o.Config.Labels).(v1.ImageIndex)
		if !ok {
			return nil, fmt.Errorf("image index: annotations")
		}
		idx = annotated
	}
	return idx, nil
}

func buildArch(ctx context.Context, tmp string, o IndexOptions, arch string) (v1.Image, error) {
	if err := os.MkdirAll(tmp, 0o750); err != nil {
		return nil, err
	}
	c := o.Config
	c.Arch = arch
	return Build(ctx, o.Dir, tmp, o.LDFlags, o.Binaries, c)
}

// WriteLayout writes idx as the only entry of a new OCI image layout in
// dir (replaced if it exists), named tag.
func WriteLayout(dir string, idx v1.ImageIndex, tag string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("OCI layout: %w", err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("OCI layout: %w", err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{AnnotationRefName: tag})); err != nil {
		return fmt.Errorf("OCI layout: %w", err)
	}
	return nil
}

// ReadLayout is the image index named tag in the OCI layout at dir, or its
// only entry when tag is "".
func ReadLayout(dir, tag string) (v1.ImageIndex, string, error) {
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, "", fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, "", fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	var names []string
	for _, d := range m.Manifests {
		n := d.Annotations[AnnotationRefName]
		names = append(names, n)
		if (tag == "" && len(m.Manifests) == 1) || (tag != "" && n == tag) {
			idx, err := top.ImageIndex(d.Digest)
			if err != nil {
				return nil, "", fmt.Errorf("OCI layout %s: %w", dir, err)
			}
			return idx, n, nil
		}
	}
	return nil, "", fmt.Errorf("OCI layout %s: no image index named %q among %q", dir, tag, names)
}

// Push pushes idx to ref (REGISTRY/REPOSITORY:TAG) with the credentials of
// the Docker config (docker login, $DOCKER_CONFIG) or a credential helper;
// plainHTTP talks HTTP to the registry.
func Push(ctx context.Context, ref string, idx v1.ImageIndex, plainHTTP bool) (v1.Hash, error) {
	var opts []name.Option
	if plainHTTP {
		opts = append(opts, name.Insecure)
	}
	tag, err := name.NewTag(ref, opts...)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("push: %w", err)
	}
	if err := remote.WriteIndex(tag, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return v1.Hash{}, fmt.Errorf("push %s: %w", tag, err)
	}
	return idx.Digest()
}

// Arches are the architectures of platforms such as "linux/amd64,linux/arm64".
func Arches(platforms string) ([]string, error) {
	var out []string
	for p := range strings.SplitSeq(platforms, ",") {
		os, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || os != "linux" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("platform %q: want linux/ARCH", p)
		}
		if slices.Contains(out, arch) {
			return nil, fmt.Errorf("platform %q given twice", p)
		}
		out = append(out, arch)
	}
	return out, nil
}
