package images

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Tag is the tag of this repository's test images. Not "latest": the kubelet
// would then default imagePullPolicy to Always and try to pull.
const Tag = "test"

// Ref is the reference containerd and the kubelet use for the image called
// name with Tag: docker.io/library/NAME:test, which a pod can also spell
// NAME:test.
func Ref(name string) string { return "docker.io/library/" + name + ":" + Tag }

// checkRef accepts only a fully normalized reference with a tag, as the CRI
// plugin normalizes what the kubelet asks for and then looks the image up by
// that exact string: a short "echo:test" would be imported under that name and
// never be found.
func checkRef(ref string) error {
	// Strict: an explicit registry and tag, and library/ on Docker Hub.
	if _, err := name.NewTag(ref, name.StrictValidation); err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	// go-containerregistry accepts index.docker.io, containerd spells Docker
	// Hub docker.io.
	if strings.HasPrefix(ref, "index.docker.io/") {
		return fmt.Errorf("image reference %q: Docker Hub is docker.io in containerd", ref)
	}
	return nil
}
