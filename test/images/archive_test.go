package images

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// openArchive unpacks the archive at p into a temporary directory, the way
// ctr reads it (regular files only), and opens it as an OCI layout with
// go-containerregistry. It returns the index and the archive's headers.
func openArchive(t *testing.T, p string) (v1.ImageIndex, []*tar.Header) {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(p) //nolint:gosec // the archive the test just built
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var entries []*tar.Header
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		entries = append(entries, hdr)
		if hdr.Typeflag != tar.TypeReg || !filepath.IsLocal(hdr.Name) {
			t.Fatalf("%s: entry %q of type %c: want only regular files inside the layout", p, hdr.Name, hdr.Typeflag)
		}
		dst := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(dst) //nolint:gosec // a local name, checked above
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(out, tr) //nolint:gosec // an archive this test built
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("%s: not an OCI layout: %v", p, err)
	}
	return idx, entries
}

// layerEntries reads the uncompressed tar of layer: its headers, and the
// contents of its regular files.
func layerEntries(t *testing.T, layer v1.Layer) ([]*tar.Header, map[string][]byte) {
	t.Helper()
	rc, err := layer.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var hdrs []*tar.Header
	files := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return hdrs, files
		}
		if err != nil {
			t.Fatal(err)
		}
		hdrs = append(hdrs, hdr)
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = b
	}
}
