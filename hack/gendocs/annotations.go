package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
)

// annotation is one Service annotation and what its doc comment says.
type annotation struct {
	name, key, meaning, typ, def, example string
}

// reason is one Event reason.
type reason struct{ name, value string }

var (
	typeRE    = regexp.MustCompile(`(?s)Type: (.*?)\.(?:\s|$)`)
	exampleRE = regexp.MustCompile(`(?m)^Example: (.*)$`)
)

// loadAnnotations reads the constants of type Annotation and the Event
// reasons (the string constants named Reason*) of pkg/metal/annotations.go.
// Each annotation's comment must say its Type, Default and Example.
func loadAnnotations(path string) ([]annotation, []reason, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
	if err != nil {
		return nil, nil, fmt.Errorf("parse %s: %w", path, err)
	}
	var anns []annotation
	var reasons []reason
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if len(vs.Names) != 1 || len(vs.Values) != 1 {
				continue
			}
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			value, err := strconv.Unquote(lit.Value)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", vs.Names[0].Name, err)
			}
			name := vs.Names[0].Name
			if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Annotation" {
				a, err := parseAnnotation(name, value, vs.Doc.Text())
				if err != nil {
					return nil, nil, err
				}
				anns = append(anns, a)
			} else if strings.HasPrefix(name, "Reason") {
				reasons = append(reasons, reason{name, value})
			}
		}
	}
	if len(anns) == 0 {
		return nil, nil, fmt.Errorf("%s: no constants of type Annotation", path)
	}
	return anns, reasons, nil
}

func parseAnnotation(name, key, doc string) (annotation, error) {
	a := annotation{name: name, key: key}
	var meaning []string
	for _, line := range strings.Split(strings.TrimSpace(doc), "\n") {
		switch {
		case strings.HasPrefix(line, "Type: "):
			if m := typeRE.FindStringSubmatch(line); m != nil {
				a.typ = m[1]
			}
			if m := defaultRE.FindStringSubmatch(line); m != nil {
				a.def = m[1]
			}
		case exampleRE.MatchString(line):
			a.example = strings.Trim(exampleRE.FindStringSubmatch(line)[1], `"`)
		default:
			meaning = append(meaning, line)
		}
	}
	a.meaning = oneLine(strings.Join(meaning, " "))
	a.meaning = strings.TrimSpace(strings.TrimPrefix(a.meaning, name))
	if a.typ == "" || a.def == "" || a.example == "" {
		return a, fmt.Errorf("annotation %s: its comment must have a line \"Type: ... Default: ...\" and a line \"Example: ...\"", name)
	}
	return a, nil
}

func writeAnnotations(b *bytes.Buffer, anns []annotation, reasons []reason) {
	b.WriteString("## Annotations\n\n| annotation | type | default | example | meaning |\n| --- | --- | --- | --- | --- |\n")
	for _, a := range anns {
		fmt.Fprintf(b, "| `%s` | %s | %s | `%s` | %s |\n", a.key, cell(a.typ), cell(a.def), cell(a.example), cell(a.meaning))
	}
	b.WriteString("\n## Event reasons\n\nThe reasons of the Events the provider records on Services. They are stable: alerts may match them.\n\n")
	b.WriteString("| reason | constant |\n| --- | --- |\n")
	for _, r := range reasons {
		fmt.Fprintf(b, "| `%s` | `%s` |\n", r.value, r.name)
	}
}
