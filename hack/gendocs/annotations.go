package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
)

// annotationDoc is one Service annotation as pkg/annotation declares it.
type annotationDoc = annotation.Doc

// reason is one Event reason.
type reason struct{ name, value string }

// loadAnnotations returns the annotations pkg/annotation declares (its
// declarations are the one source of their names, types, defaults,
// examples and meanings; this program is built from the same tree) and the
// Event reasons: the string constants named Reason* of the file at path
// (pkg/metal/reasons.go), parsed for their Go names. Each annotation
// must have a type, default, example and meaning.
func loadAnnotations(path string) ([]annotationDoc, []reason, error) {
	anns := annotation.All()
	if len(anns) == 0 {
		return nil, nil, fmt.Errorf("%s: no annotations declared", path)
	}
	for _, a := range anns {
		if a.Type == "" || a.Default == "" || a.Example == "" || a.Meaning == "" {
			return nil, nil, fmt.Errorf("annotation %s: its declaration must have a type, a default, an example and a meaning", a.Name)
		}
	}
	reasons, err := loadReasons(path)
	if err != nil {
		return nil, nil, err
	}
	return anns, reasons, nil
}

// loadReasons reads the string constants named Reason* of a Go file.
func loadReasons(path string) ([]reason, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	var reasons []reason
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if len(vs.Names) != 1 || len(vs.Values) != 1 || !strings.HasPrefix(vs.Names[0].Name, "Reason") {
				continue
			}
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			value, err := strconv.Unquote(lit.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", vs.Names[0].Name, err)
			}
			reasons = append(reasons, reason{vs.Names[0].Name, value})
		}
	}
	if len(reasons) == 0 {
		return nil, fmt.Errorf("%s: no Reason* constants", path)
	}
	return reasons, nil
}

func writeAnnotations(b *bytes.Buffer, anns []annotationDoc, reasons []reason) {
	b.WriteString("## Annotations\n\n| annotation | type | default | example | meaning |\n| --- | --- | --- | --- | --- |\n")
	for _, a := range anns {
		meaning := a.Meaning
		if len(a.Aliases) > 0 {
			names := make([]string, len(a.Aliases))
			for i, n := range a.Aliases {
				names[i] = "`" + string(n) + "`"
			}
			meaning += " When it is not set, " + strings.Join(names, " or ") + " is read as it (MetalLB's, for a migration: docs/migration.md)."
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | `%s` | %s |\n", a.Name, cell(a.Type), cell(a.Default), cell(a.Example), cell(meaning))
	}
	b.WriteString("\n## Event reasons\n\nThe reasons of the Events the provider records on Services. They are stable: alerts may match them.\n\n")
	b.WriteString("| reason | constant |\n| --- | --- |\n")
	for _, r := range reasons {
		fmt.Fprintf(b, "| `%s` | `%s` |\n", r.value, r.name)
	}
}
