package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
)

// reasonFiles are the files that declare Event reasons, relative to the
// repository's root: each const block whose doc comment starts with
// "Event reasons" is one group of the reference.
var reasonFiles = []string{
	"pkg/metal/reasons.go",
	"pkg/lbcontroller/controller.go",
	"pkg/replica/health.go",
	"pkg/outofservice/outofservice.go",
	"pkg/fencing/fencing.go",
	"pkg/csrapproval/approver.go",
}

// reason is one Event reason: its value, its constant's Go name and what
// the constant's comment says of it.
type reason struct{ name, value, meaning string }

// reasonGroup is one const block of reasons: its doc comment's first
// sentence and the package that declares it.
type reasonGroup struct {
	title, pkg string
	reasons    []reason
}

// loadReasons reads the groups of Event reasons of reasonFiles.
func loadReasons(root string) ([]reasonGroup, error) {
	var groups []reasonGroup
	for _, rel := range reasonFiles {
		path := filepath.Join(root, rel)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
		n := len(groups)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST || gd.Doc == nil || !strings.HasPrefix(gd.Doc.Text(), "Event reasons") {
				continue
			}
			g := reasonGroup{title: firstSentence(gd.Doc.Text()), pkg: filepath.Dir(rel)}
			for _, spec := range gd.Specs {
				r, ok, err := reasonOf(spec.(*ast.ValueSpec))
				if err != nil {
					return nil, fmt.Errorf("%s: %w", rel, err)
				}
				if ok {
					g.reasons = append(g.reasons, r)
				}
			}
			groups = append(groups, g)
		}
		if len(groups) == n {
			return nil, fmt.Errorf("%s: no const block whose comment starts with \"Event reasons\"", rel)
		}
	}
	return groups, nil
}

// reasonOf is the reason a constant Reason* = "..." declares.
func reasonOf(vs *ast.ValueSpec) (reason, bool, error) {
	if len(vs.Names) != 1 || len(vs.Values) != 1 || !strings.HasPrefix(vs.Names[0].Name, "Reason") {
		return reason{}, false, nil
	}
	lit, ok := vs.Values[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return reason{}, false, nil
	}
	value, err := strconv.Unquote(lit.Value)
	if err != nil {
		return reason{}, false, fmt.Errorf("%s: %w", vs.Names[0].Name, err)
	}
	meaning := strings.Join(strings.Fields(vs.Doc.Text()), " ")
	// "ReasonX: the node ...", "ReasonX, on ..." or "ReasonX is a
	// warning ...": the name goes.
	meaning = strings.TrimLeft(strings.TrimPrefix(meaning, vs.Names[0].Name), ":, ")
	meaning = strings.TrimPrefix(meaning, "is ")
	return reason{vs.Names[0].Name, value, meaning}, true, nil
}

// firstSentence is text up to its first ". ", or all of it.
func firstSentence(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if i := strings.Index(text, ". "); i >= 0 {
		return text[:i]
	}
	return strings.TrimSuffix(text, ".")
}

func writeReasons(b *bytes.Buffer, groups []reasonGroup) {
	b.WriteString("\n## Event reasons\n\nThe reasons of the Events metal-ccm records, from the const blocks that declare them. They are stable: alerts may match them.\n")
	for _, g := range groups {
		fmt.Fprintf(b, "\n### %s (`%s`)\n\n| reason | constant | meaning |\n| --- | --- | --- |\n", g.title, g.pkg)
		for _, r := range g.reasons {
			fmt.Fprintf(b, "| `%s` | `%s` | %s |\n", r.value, r.name, cell(r.meaning))
		}
	}
}
