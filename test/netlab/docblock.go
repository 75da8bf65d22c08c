package netlab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// DocBlock is the code block that follows marker (an HTML comment such as
// "<!-- policy:bird -->" on a line of its own) in the repository's
// docs/NAME, without its fences: how a test runs what the docs give.
func DocBlock(name, marker string) (string, error) {
	path := filepath.Join(framework.RepoRoot(), "docs", name)
	doc, err := os.ReadFile(path) //nolint:gosec // the repository's own docs
	if err != nil {
		return "", err
	}
	_, after, ok := strings.Cut(string(doc), marker+"\n```\n")
	if !ok {
		return "", fmt.Errorf("%s lacks %s followed by a code block", path, marker)
	}
	block, _, ok := strings.Cut(after, "\n```\n")
	if !ok {
		return "", fmt.Errorf("%s: the block after %s does not end", path, marker)
	}
	return block, nil
}
