package imagebuild

import (
	"archive/tar"
	"encoding/binary"
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

// User is the user and group the images run as: distroless's "nonroot". The
// images have no /etc/passwd, so it is numeric.
const User = "65532:65532"

// Epoch is every time written into a layer or an archive, and the created
// time of the test images, so that digests depend on the contents only.
var Epoch = time.Unix(0, 0).UTC()

// envPath is the only variable in the image's environment. The image has no
// shell and no other files; PATH is there for tools that expect one.
const envPath = "PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin"

// File is a file of a layer: the local file Src at Path (absolute) in the
// image, with extended attributes Xattrs (such as CapNetRawPermitted).
type File struct {
	Src, Path string
	Xattrs    map[string]string
}

// capNetRaw is CAP_NET_RAW's number (linux/capability.h).
const capNetRaw = 13

// CapNetRawPermitted is the security.capability attribute of a file that
// holds CAP_NET_RAW as a permitted, not effective, file capability
// (`setcap cap_net_raw=p`): a struct vfs_cap_data of revision 2, little
// endian, without the effective flag.
func CapNetRawPermitted() map[string]string {
	b := make([]byte, 20)
	binary.LittleEndian.PutUint32(b[0:], 0x02000000) // VFS_CAP_REVISION_2
	binary.LittleEndian.PutUint32(b[4:], 1<<capNetRaw)
	return map[string]string{"security.capability": string(b)}
}

// WriteLayer writes an uncompressed layer tar at out holding only files,
// each mode 0755, owned by root. Their parent directories are not in the
// layer: containerd creates missing parents with mode 0755.
func WriteLayer(out string, files []File) (err error) {
	f, err := os.Create(out) //nolint:gosec // a file in the caller's temporary directory
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

func addLayerFile(tw *tar.Writer, lf File) error {
	src, err := os.Open(lf.Src)
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
		Name:     strings.TrimPrefix(lf.Path, "/"), // layer paths are relative to the root
		Mode:     0o755,
		Size:     fi.Size(),
		ModTime:  Epoch,
		Format:   tar.FormatUSTAR, // no PAX records: the header is the same everywhere
	}
	if len(lf.Xattrs) > 0 {
		// Extended attributes are PAX records (SCHILY.xattr.NAME), which
		// containerd sets on the unpacked file.
		hdr.Format = tar.FormatPAX
		hdr.PAXRecords = map[string]string{}
		for k, v := range lf.Xattrs {
			hdr.PAXRecords["SCHILY.xattr."+k] = v
		}
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	if _, err := io.Copy(tw, src); err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	return nil
}

// Config is what NewImage writes into an image's config besides its one
// layer.
type Config struct {
	// Arch is the platform's architecture (GOARCH); the OS is linux.
	Arch string
	// Entrypoint is the binary the image runs (absolute).
	Entrypoint string
	// Created is the image's creation time: Epoch for the test images,
	// SOURCE_DATE_EPOCH for a release.
	Created time.Time
	// CreatedBy says what made the layer (its history entry).
	CreatedBy string
	// Labels are the config's labels (org.opencontainers.image.*).
	Labels map[string]string
}

// NewImage is the OCI image of one layer, the tar at layerPath, that runs
// c.Entrypoint as User.
func NewImage(layerPath string, c Config) (v1.Image, error) {
	layer, err := tarball.LayerFromFile(layerPath, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	created := v1.Time{Time: c.Created.UTC()}
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: c.Arch,
		OS:           "linux",
		Created:      created,
		Config: v1.Config{
			User:       User,
			Entrypoint: []string{c.Entrypoint},
			Env:        []string{envPath},
			Labels:     c.Labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: created, CreatedBy: c.CreatedBy},
	})
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	return img, nil
}
