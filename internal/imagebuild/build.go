package imagebuild

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Binary is a main package built into an image at Path (absolute), with
// extended attributes Xattrs on the file.
type Binary struct {
	Package, Path string
	Xattrs        map[string]string
}

// Build compiles bins for c.Arch (go build in dir, with ldflags; see
// GoBuild) into tmp, a directory of the caller's, and returns the image of
// one layer holding them, whose entrypoint is the first. c.Entrypoint and an
// empty c.CreatedBy are filled in.
func Build(ctx context.Context, dir, tmp, ldflags string, bins []Binary, c Config) (v1.Image, error) {
	if len(bins) == 0 {
		return nil, fmt.Errorf("image: no binary")
	}
	files := make([]File, len(bins))
	pkgs := make([]string, len(bins))
	for i, b := range bins {
		files[i] = File{Src: filepath.Join(tmp, fmt.Sprintf("bin%d", i)), Path: b.Path, Xattrs: b.Xattrs}
		pkgs[i] = b.Package
		if err := GoBuild(ctx, dir, c.Arch, b.Package, files[i].Src, ldflags); err != nil {
			return nil, err
		}
	}
	layer := filepath.Join(tmp, "layer.tar")
	if err := WriteLayer(layer, files); err != nil {
		return nil, err
	}
	c.Entrypoint = bins[0].Path
	if c.CreatedBy == "" {
		c.CreatedBy = "go build " + strings.Join(pkgs, " ")
	}
	return NewImage(layer, c)
}
