package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
)

// annotationDoc is one Service annotation as pkg/annotation declares it.
type annotationDoc = annotation.Doc

// loadAnnotations returns the annotations pkg/annotation declares (its
// declarations are the one source of their names, types, defaults,
// examples and meanings; this program is built from the same tree). Each
// annotation must have a type, default, example and meaning.
func loadAnnotations() ([]annotationDoc, error) {
	anns := annotation.All()
	if len(anns) == 0 {
		return nil, errors.New("pkg/annotation: no annotations declared")
	}
	for _, a := range anns {
		if a.Type == "" || a.Default == "" || a.Example == "" || a.Meaning == "" {
			return nil, fmt.Errorf("annotation %s: its declaration must have a type, a default, an example and a meaning", a.Name)
		}
	}
	return anns, nil
}

func writeAnnotations(b *bytes.Buffer, anns []annotationDoc, groups []reasonGroup) {
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
	writeReasons(b, groups)
}
