package golden

import (
	"bytes"
	"os"
	"testing"
)

// Doc checks that the fenced block right after the line "<!-- marker -->"
// in the Markdown file at path holds want, so that an example in the docs
// cannot drift from its golden file; with -update it rewrites the block.
func Doc(t *testing.T, path, marker string, want []byte) {
	t.Helper()
	doc, err := os.ReadFile(path) //nolint:gosec // a file of the repository's docs
	if err != nil {
		t.Fatal(err)
	}
	start, end, ok := block(doc, marker)
	if !ok {
		t.Fatalf("%s: no fenced block after <!-- %s -->", path, marker)
	}
	if bytes.Equal(doc[start:end], want) {
		return
	}
	if !*update {
		t.Errorf("%s: the block after <!-- %s --> differs from its golden file (run with -update):\ngot:\n%s\nwant:\n%s", path, marker, doc[start:end], want)
		return
	}
	out := append(append(append([]byte{}, doc[:start]...), want...), doc[end:]...)
	if err := os.WriteFile(path, out, 0o600); err != nil { //nolint:gosec // a file of the repository's docs, rewritten on -update
		t.Fatal(err)
	}
}

// block finds the content of the fenced block after the marker: from the
// line after its opening fence to the start of its closing fence.
func block(doc []byte, marker string) (start, end int, ok bool) {
	m := bytes.Index(doc, []byte("<!-- "+marker+" -->\n"))
	if m < 0 {
		return 0, 0, false
	}
	rest := doc[m+len(marker)+len("<!--  -->\n"):]
	if !bytes.HasPrefix(rest, []byte("```")) {
		return 0, 0, false
	}
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 {
		return 0, 0, false
	}
	start = len(doc) - len(rest) + nl + 1
	if bytes.HasPrefix(doc[start:], []byte("```")) {
		return start, start, true // an empty block
	}
	closing := bytes.Index(doc[start:], []byte("\n```"))
	if closing < 0 {
		return 0, 0, false
	}
	return start, start + closing + 1, true
}
