package images

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the user and group the images run as: distroless's "nonroot", as
// in the Dockerfile. The images have no /etc/passwd, so it is numeric.
const User = "65532:65532"

// epoch is every time written into an image or archive, so that digests
// depend on the contents only.
var epoch = time.Unix(0, 0).UTC()

// envPath is the only variable in the image's environment. The image has no
// shell and no other files; PATH is there for tools that expect one.
const envPath = "PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin"

// layerFile is a file of a layer: the local file src at path (absolute) in
// the image.
type layerFile struct{ src, path string }

// writeLayer writes an uncompressed layer tar at out holding only files,
// each mode 0755, owned by root. Their parent directories are not in the
// layer: containerd creates missing parents with mode 0755.
func writeLayer(out string, files []layerFile) (err error) {
	f, err := os.Create(out) //nolint:gosec // a file in Build's temporary directory
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("layer: %w", cerr)
		}
	}()
	tw := tar.NewWriter(f)
	for _, lf := range files {
		if err := addLayerFile(tw, lf); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	return nil
}

func addLayerFile(tw *tar.Writer, lf layerFile) error {
	src, err := os.Open(lf.src)
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     strings.TrimPrefix(lf.path, "/"), // layer paths are relative to the root
		Mode:     0o755,
		Size:     fi.Size(),
		ModTime:  epoch,
		Format:   tar.FormatUSTAR, // no PAX records: the header is the same everywhere
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	if _, err := io.Copy(tw, src); err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	return nil
}

// newImage is the OCI image of one layer, the tar at layerPath, that runs
// binPath as User.
func newImage(layerPath, binPath, arch, createdBy string) (v1.Image, error) {
	layer, err := tarball.LayerFromFile(layerPath, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: arch,
		OS:           "linux",
		Created:      v1.Time{Time: epoch},
		Config: v1.Config{
			User:       User,
			Entrypoint: []string{binPath},
			Env:        []string{envPath},
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: createdBy},
	})
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	return img, nil
}
