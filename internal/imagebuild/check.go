package imagebuild

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Expect is what Check requires of an image index.
type Expect struct {
	// Arches are the linux architectures it holds, one image each, in
	// this order.
	Arches []string
	// Entrypoint is every image's entrypoint.
	Entrypoint string
	// Files are the only files of every image's one layer (absolute
	// paths), each with exactly these extended attributes.
	Files map[string]map[string]string
	// Labels must be among every image's labels.
	Labels map[string]string
}

// Check verifies idx: one image per architecture of want, each with one
// layer holding want's files and nothing else (no shell), the entrypoint
// and labels of want, run as a numeric user and group other than 0.
func Check(idx v1.ImageIndex, want Expect) error {
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	var arches []string
	var errs []error
	for _, d := range m.Manifests {
		if d.Platform == nil || d.Platform.OS != "linux" {
			errs = append(errs, fmt.Errorf("manifest %s: platform %v, want linux", d.Digest, d.Platform))
			continue
		}
		arches = append(arches, d.Platform.Architecture)
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		if err := checkImage(img, d.Platform.Architecture, want); err != nil {
			errs = append(errs, fmt.Errorf("linux/%s: %w", d.Platform.Architecture, err))
		}
	}
	if !slices.Equal(arches, want.Arches) {
		errs = append(errs, fmt.Errorf("architectures %v, want %v", arches, want.Arches))
	}
	return errors.Join(errs...)
}

func checkImage(img v1.Image, arch string, want Expect) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	var errs []error
	if cf.Architecture != arch || cf.OS != "linux" {
		errs = append(errs, fmt.Errorf("config platform %s/%s", cf.OS, cf.Architecture))
	}
	if err := checkUser(cf.Config.User); err != nil {
		errs = append(errs, err)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{want.Entrypoint}) {
		errs = append(errs, fmt.Errorf("entrypoint %q, want [%s]", cf.Config.Entrypoint, want.Entrypoint))
	}
	for k, v := range want.Labels {
		if cf.Config.Labels[k] != v {
			errs = append(errs, fmt.Errorf("label %s %q, want %q", k, cf.Config.Labels[k], v))
		}
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	if len(layers) != 1 {
		return errors.Join(append(errs, fmt.Errorf("%d layers, want 1", len(layers)))...)
	}
	files, err := layerFiles(layers[0])
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if !maps.EqualFunc(files, want.Files, maps.Equal) {
		errs = append(errs, fmt.Errorf("layer files %s, want %s", describe(files), describe(want.Files)))
	}
	return errors.Join(errs...)
}

// checkUser accepts only USER:GROUP, both numeric and not 0: the kubelet's
// runAsNonRoot check needs a numeric user, and the image has no
// /etc/passwd to resolve a name.
func checkUser(user string) error {
	u, g, ok := strings.Cut(user, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil || uid == 0 || gid == 0 {
		return fmt.Errorf("user %q, want a numeric non-root USER:GROUP", user)
	}
	return nil
}

// layerFiles are the entries of a layer, each with its extended attributes
// (nil for none); a non-regular entry is an error.
func layerFiles(l v1.Layer) (map[string]map[string]string, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	out := map[string]map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("layer entry %s: type %c, want only regular files", h.Name, h.Typeflag)
		}
		var xattrs map[string]string
		for k, v := range h.PAXRecords {
			if name, ok := strings.CutPrefix(k, "SCHILY.xattr."); ok {
				if xattrs == nil {
					xattrs = map[string]string{}
				}
				xattrs[name] = v
			}
		}
		out["/"+h.Name] = xattrs
	}
}

func describe(files map[string]map[string]string) string {
	var parts []string
	for _, f := range slices.Sorted(maps.Keys(files)) {
		parts = append(parts, fmt.Sprintf("%s%v", f, slices.Sorted(maps.Keys(files[f]))))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
