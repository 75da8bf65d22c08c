package images

import (
	"fmt"

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
