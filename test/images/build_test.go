package images

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/metal-ccm/metal-ccm/internal/imagebuild"
)

// buildTimeout bounds one image build in the tests: a cold build of the CCM
// on two busy cores takes minutes.
const buildTimeout = 8 * time.Minute

func build(t *testing.T, opts Options) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	start := time.Now()
	res, err := Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s in %s: %s, %d bytes, %s", res.Ref, time.Since(start).Round(time.Millisecond), res.Path, fi.Size(), res.Digest)
	return res
}

func TestBuild(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func(out string) Options
	}{
		{"pause", Pause},
		{"echo", Echo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts(filepath.Join(t.TempDir(), tc.name+".tar"))
			checkImage(t, opts, build(t, opts))
		})
	}
}

// TestBuildCCM builds the CCM's image. It is opt-in (METAL_CCM_BUILD_CCM_IMAGE=1):
// with a cold build cache it takes minutes (4.5 on two idle cores), as no
// other build compiles the CCM with these flags; warm, seconds.
func TestBuildCCM(t *testing.T) {
	if os.Getenv("METAL_CCM_BUILD_CCM_IMAGE") != "1" {
		t.Skip("set METAL_CCM_BUILD_CCM_IMAGE=1 to build the CCM's image")
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	start := time.Now()
	res, err := BuildCCM(ctx, filepath.Join(t.TempDir(), "ccm.tar"))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s in %s: %d bytes", res.Ref, time.Since(start).Round(time.Millisecond), fi.Size())
	opts := CCM(res.Path)
	if opts.Binary != "/usr/local/bin/metal-cloud-controller-manager" {
		t.Errorf("binary %s, want the release image's /usr/local/bin/metal-cloud-controller-manager", opts.Binary)
	}
	checkImage(t, opts, res)
}

// TestReproducible builds the pause image twice: same digests, same bytes.
func TestReproducible(t *testing.T) {
	dir := t.TempDir()
	a := build(t, Pause(filepath.Join(dir, "a.tar")))
	b := build(t, Pause(filepath.Join(dir, "b.tar")))
	if a.Digest != b.Digest || a.ID != b.ID {
		t.Errorf("two builds: digests %s and %s, IDs %s and %s", a.Digest, b.Digest, a.ID, b.ID)
	}
	ba, err := os.ReadFile(a.Path)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := os.ReadFile(b.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ba, bb) {
		t.Error("two builds: archives differ")
	}
}

// checkImage opens the archive of res and checks it against what opts asked.
func checkImage(t *testing.T, opts Options, res Result) {
	t.Helper()
	idx, entries := openArchive(t, res.Path)
	checkArchiveEntries(t, entries)
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("index has %d manifests, want 1", len(im.Manifests))
	}
	desc := im.Manifests[0]
	for _, key := range []string{annotationContainerdName, annotationOCIRefName} {
		if got := desc.Annotations[key]; got != opts.Ref {
			t.Errorf("index annotation %s = %q, want %q", key, got, opts.Ref)
		}
	}
	if p := desc.Platform; p == nil || p.OS != "linux" || p.Architecture != runtime.GOARCH {
		t.Errorf("index platform %+v, want linux/%s", p, runtime.GOARCH)
	}
	if desc.MediaType != types.OCIManifestSchema1 || desc.Digest != res.Digest {
		t.Errorf("index entry %s %s, want %s %s", desc.MediaType, desc.Digest, types.OCIManifestSchema1, res.Digest)
	}
	img, err := idx.Image(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	// Digests, sizes and diff IDs agree with the blobs.
	if err := validate.Image(img); err != nil {
		t.Errorf("invalid image: %v", err)
	}
	if id, err := img.ConfigName(); err != nil || id != res.ID {
		t.Errorf("config digest %s (%v), want %s", id, err, res.ID)
	}
	checkConfig(t, img, opts)
	checkLayer(t, img, opts)
}

// checkArchiveEntries checks the tar of the layout: its files only, each
// with fixed metadata.
func checkArchiveEntries(t *testing.T, entries []*tar.Header) {
	t.Helper()
	var names []string
	for _, h := range entries {
		names = append(names, h.Name)
		if h.Mode != 0o644 || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(imagebuild.Epoch) {
			t.Errorf("archive entry %s: mode %o uid %d gid %d time %s, want 644, 0, 0, the imagebuild.Epoch", h.Name, h.Mode, h.Uid, h.Gid, h.ModTime)
		}
	}
	// A config, a layer and a manifest.
	if len(names) != 5 || !slices.Contains(names, "oci-layout") || !slices.Contains(names, "index.json") {
		t.Errorf("archive entries %q, want oci-layout, index.json and three blobs", names)
	}
	for _, n := range names {
		if n != "oci-layout" && n != "index.json" && !strings.HasPrefix(n, "blobs/sha256/") {
			t.Errorf("archive entry %q: not part of an OCI layout", n)
		}
	}
}

func checkConfig(t *testing.T, img v1.Image, opts Options) {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("media types %s, %s: want OCI's", m.MediaType, m.Config.MediaType)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{opts.Binary}) || c.Cmd != nil {
		t.Errorf("entrypoint %q cmd %q, want [%s] and none", c.Entrypoint, c.Cmd, opts.Binary)
	}
	if len(c.Env) != 1 || !strings.HasPrefix(c.Env[0], "PATH=") {
		t.Errorf("env %q, want PATH only", c.Env)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	if !cf.Created.Equal(imagebuild.Epoch) {
		t.Errorf("created %s, want the imagebuild.Epoch", cf.Created.Time)
	}
	if len(cf.History) != 1 || !cf.History[0].Created.Equal(imagebuild.Epoch) {
		t.Errorf("history %+v, want one entry at the imagebuild.Epoch", cf.History)
	}
}

func checkLayer(t *testing.T, img v1.Image, opts Options) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	if mt, err := layers[0].MediaType(); err != nil || mt != types.OCILayer {
		t.Errorf("layer media type %s (%v), want %s", mt, err, types.OCILayer)
	}
	hdrs, files := layerEntries(t, layers[0])
	var want, names []string
	for _, b := range append([]string{opts.Binary}, extraBinaries(opts.Extra)...) {
		want = append(want, strings.TrimPrefix(b, "/"))
	}
	for _, h := range hdrs {
		names = append(names, h.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("layer entries %q, want only %q", names, want)
	}
	for _, h := range hdrs {
		if h.Typeflag != tar.TypeReg || h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(imagebuild.Epoch) {
			t.Errorf("%s: type %c mode %o uid %d gid %d time %s, want a file, 0755, root, the imagebuild.Epoch", h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.ModTime)
		}
		checkStatic(t, files[h.Name])
	}
}

// goarchMachine is the ELF machine of each GOARCH the tests may run on.
var goarchMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// checkStatic checks that b is a Linux executable for this machine that
// needs no dynamic loader (no libc in the image).
func checkStatic(t *testing.T, b []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("binary: not ELF: %v", err)
	}
	defer f.Close()
	if m, ok := goarchMachine[runtime.GOARCH]; ok && f.Machine != m {
		t.Errorf("binary for %s, want %s", f.Machine, m)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("binary has an interpreter: not static")
		}
	}
}
