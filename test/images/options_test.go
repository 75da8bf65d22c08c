package images

import (
	"context"
	"strings"
	"testing"
)

func TestCheckRef(t *testing.T) {
	for _, tc := range []struct {
		ref string
		ok  bool
	}{
		{"docker.io/library/pause:test", true},
		{"docker.io/metal-ccm/echo:v1", true},
		{"localhost/echo:test", true},
		{"registry.example:5000/a/b:c", true},
		{"pause:test", false},                                                // not normalized: the CRI would not find it
		{"docker.io/pause:test", false},                                      // Docker Hub without library/
		{"index.docker.io/library/pause:test", false},                        // go-containerregistry's spelling, not containerd's
		{"docker.io/library/pause", false},                                   // no tag
		{"docker.io/library/Pause:test", false},                              // upper case
		{"docker.io/library/pause@sha256:" + strings.Repeat("0", 64), false}, // a digest names no image to import
		{"", false},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			err := checkRef(tc.ref)
			if (err == nil) != tc.ok {
				t.Errorf("checkRef(%q) = %v, want ok %v", tc.ref, err, tc.ok)
			}
		})
	}
}

func TestPresets(t *testing.T) {
	for _, tc := range []struct {
		name           string
		opts           Options
		binary, ref, p string
	}{
		{"pause", Pause("p.tar"), "/bin/pause", "docker.io/library/pause:test", Module + "/test/images/cmd/pause"},
		{"echo", Echo("e.tar"), "/bin/echo", "docker.io/library/echo:test", Module + "/test/images/cmd/echo"},
		{"ccm", CCM("c.tar"), "/usr/local/bin/metal-cloud-controller-manager",
			"docker.io/library/metal-cloud-controller-manager:test", Module + "/cmd/metal-cloud-controller-manager"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.opts.check(); err != nil {
				t.Fatal(err)
			}
			if tc.opts.Binary != tc.binary || tc.opts.Ref != tc.ref || tc.opts.Package != tc.p {
				t.Errorf("%+v, want binary %s, ref %s, package %s", tc.opts, tc.binary, tc.ref, tc.p)
			}
			if tc.name == "ccm" && (len(tc.opts.Extra) != 1 || tc.opts.Extra[0].Binary != "/usr/local/bin/metal-node-agent") {
				t.Errorf("the CCM's image lacks the node agent beside it, as the release image has it: %+v", tc.opts.Extra)
			}
		})
	}
}

// TestBuildRejects checks that bad options fail before anything is built.
func TestBuildRejects(t *testing.T) {
	good := Pause("x.tar")
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"no package", func(o *Options) { o.Package = "" }, "no package"},
		{"no output", func(o *Options) { o.Out = "" }, "no output"},
		{"relative binary", func(o *Options) { o.Binary = "bin/pause" }, "binary path"},
		{"directory binary", func(o *Options) { o.Binary = "/bin/" }, "binary path"},
		{"unclean binary", func(o *Options) { o.Binary = "/bin/../pause" }, "binary path"},
		{"short ref", func(o *Options) { o.Ref = "pause:test" }, "image reference"},
		{"extra binary twice", func(o *Options) { o.Extra = []Extra{{Package: o.Package, Binary: o.Binary}} }, "given twice"},
		{"extra without package", func(o *Options) { o.Extra = []Extra{{Binary: "/bin/other"}} }, "no package"},
		{"relative extra binary", func(o *Options) { o.Extra = []Extra{{Package: o.Package, Binary: "other"}} }, "binary path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := good
			tc.change(&opts)
			// A cancelled context: a build that started would fail otherwise.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := Build(ctx, opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build(%+v) = %v, want an error with %q", opts, err, tc.want)
			}
		})
	}
}
