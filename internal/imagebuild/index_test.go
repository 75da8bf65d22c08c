package imagebuild

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const pausePkg = "github.com/metal-ccm/metal-ccm/test/images/cmd/pause"

// testIndex builds a small index: the pause program twice (the second with
// the file capability) for the machine's architecture.
func testIndex(t *testing.T, created time.Time) IndexOptions {
	t.Helper()
	return IndexOptions{
		Dir:    ".",
		Arches: []string{runtime.GOARCH},
		Binaries: []Binary{
			{Package: pausePkg, Path: "/usr/local/bin/a"},
			{Package: pausePkg, Path: "/usr/local/bin/b", Xattrs: CapNetRawPermitted()},
		},
		Config: Config{Created: created, Labels: map[string]string{"org.opencontainers.image.version": "1.2.3"}},
	}
}

func expectTest() Expect {
	return Expect{
		Arches: []string{runtime.GOARCH}, Entrypoint: "/usr/local/bin/a",
		Files:  map[string]map[string]string{"/usr/local/bin/a": nil, "/usr/local/bin/b": CapNetRawPermitted()},
		Labels: map[string]string{"org.opencontainers.image.version": "1.2.3"},
	}
}

func TestIndexLayoutPushCheck(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	created := time.Unix(1700000000, 0)
	idx, err := BuildIndex(ctx, t.TempDir(), testIndex(t, created))
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(idx, expectTest()); err != nil {
		t.Errorf("Check: %v", err)
	}
	// The same inputs give the same digest (SOURCE_DATE_EPOCH).
	again, err := BuildIndex(ctx, t.TempDir(), testIndex(t, created))
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := idx.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds: digests %s and %s", d1, d2)
	}

	dir := filepath.Join(t.TempDir(), "layout")
	if err := WriteLayout(dir, idx, "1.2.3"); err != nil {
		t.Fatal(err)
	}
	read, tag, err := ReadLayout(dir, "")
	if err != nil || tag != "1.2.3" {
		t.Fatalf("ReadLayout: tag %q, %v", tag, err)
	}
	if _, _, err := ReadLayout(dir, "9.9.9"); err == nil {
		t.Error("ReadLayout of a tag the layout lacks: no error")
	}

	// A registry on loopback, over plain HTTP.
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/metal/img:1.2.3"
	pushed, err := Push(ctx, ref, read, true)
	if err != nil {
		t.Fatal(err)
	}
	if pushed != d1 {
		t.Errorf("pushed %s, built %s", pushed, d1)
	}
	parsed, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Index(parsed, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(got, expectTest()); err != nil {
		t.Errorf("Check of the pushed index: %v", err)
	}
	cf, err := mustImage(t, got).ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !cf.Created.Equal(created) || cf.Config.User != User {
		t.Errorf("config: created %s, user %q; want %s, %s", cf.Created.Time, cf.Config.User, created, User)
	}
}

func TestCheckRejects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := testIndex(t, Epoch)
	o.Binaries[1].Xattrs = nil
	idx, err := BuildIndex(ctx, t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	want := expectTest()
	if err := Check(idx, want); err == nil || !strings.Contains(err.Error(), "layer files") {
		t.Errorf("an agent without its capability: %v", err)
	}
	want = expectTest()
	want.Arches = []string{"amd64", "arm64"}
	want.Files["/usr/local/bin/b"] = nil
	if err := Check(idx, want); err == nil || !strings.Contains(err.Error(), "architectures") {
		t.Errorf("a missing platform: %v", err)
	}
	want = expectTest()
	want.Files["/usr/local/bin/b"] = nil
	want.Labels["org.opencontainers.image.version"] = "2.0.0"
	if err := Check(idx, want); err == nil || !strings.Contains(err.Error(), "label") {
		t.Errorf("another version: %v", err)
	}
}

func TestCheckUser(t *testing.T) {
	for user, ok := range map[string]bool{User: true, "0:0": false, "65532": false, "nonroot:nonroot": false, "65532:0": false} {
		if err := checkUser(user); (err == nil) != ok {
			t.Errorf("checkUser(%q) = %v", user, err)
		}
	}
}

func TestArches(t *testing.T) {
	got, err := Arches("linux/amd64, linux/arm64")
	if err != nil || strings.Join(got, ",") != "amd64,arm64" {
		t.Errorf("Arches = %v, %v", got, err)
	}
	for _, bad := range []string{"", "amd64", "windows/amd64", "linux/amd64,linux/amd64", "linux/arm/v7"} {
		if _, err := Arches(bad); err == nil {
			t.Errorf("Arches(%q): no error", bad)
		}
	}
}

func TestCapNetRawPermitted(t *testing.T) {
	// getcap shows this attribute as cap_net_raw=p.
	want := "\x00\x00\x00\x02\x00\x20\x00\x00" + strings.Repeat("\x00", 12)
	if got := CapNetRawPermitted()["security.capability"]; got != want {
		t.Errorf("security.capability %q, want %q", got, want)
	}
}

func mustImage(t *testing.T, idx interface {
	IndexManifest() (*v1.IndexManifest, error)
	Image(v1.Hash) (v1.Image, error)
}) v1.Image {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) == 0 {
		t.Fatalf("index manifest: %v", err)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
