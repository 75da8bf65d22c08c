package images

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// Annotations of the index entry that name the image. ctr import takes the
// first verbatim; the OCI one is its fallback, and what other OCI tools read.
const (
	annotationContainerdName = "io.containerd.image.name"
	annotationOCIRefName     = "org.opencontainers.image.ref.name"
)

// writeLayout writes img as the only image of an OCI image layout in dir,
// its index entry named ref and marked with its platform (ctr imports only the
// entries of the machine's platform).
func writeLayout(dir string, img v1.Image, ref, arch string) error {
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{
		Add: img,
		Descriptor: v1.Descriptor{
			Annotations: map[string]string{annotationContainerdName: ref, annotationOCIRefName: ref},
			Platform:    &v1.Platform{OS: "linux", Architecture: arch},
		},
	})
	if _, err := layout.Write(dir, idx); err != nil {
		return fmt.Errorf("OCI layout: %w", err)
	}
	return nil
}

// tarDir writes the regular files under dir into a tar at out, in lexical
// order, with fixed modes, owners and times: the archive's bytes depend on the
// files' contents only. It writes a temporary file and renames it, so out is
// either whole or absent.
func tarDir(dir, out string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".tmp-*")
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	tw := tar.NewWriter(tmp)
	// WalkDir visits entries in lexical order.
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err // directories need no entries: ctr skips them
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		return addFile(tw, p, filepath.ToSlash(rel))
	})
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}

// addFile writes the file at p into tw as name.
func addFile(tw *tar.Writer, p, name string) error {
	f, err := os.Open(p) //nolint:gosec // a file of the layout tarDir walks
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     0o644,
		Size:     fi.Size(),
		ModTime:  epoch,
		Format:   tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}
