package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// configDoc is the cloud-config as its Go types describe it.
type configDoc struct {
	types map[string]*ast.TypeSpec
	docs  map[string]string   // type name → doc comment
	enums map[string][]string // named type → its constants' values
}

// configSection is one object of the cloud-config and its fields.
type configSection struct {
	path, typeName, doc string
	fields              []configField
}

type configField struct {
	path, typ, def, desc string
}

var (
	defaultRE  = regexp.MustCompile(`(?s)\s*Default: (.*?)\.(?:\s|$)`)
	requiredRE = regexp.MustCompile(`(?s)\bRequired( when [^.]*)?[.,]`)
	mustRE     = regexp.MustCompile(`^\w+ must be `)
)

// loadConfigDoc parses the types file of pkg/config.
func loadConfigDoc(path string) (*configDoc, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	d := &configDoc{types: map[string]*ast.TypeSpec{}, docs: map[string]string{}, enums: map[string][]string{}}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range gd.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				d.types[s.Name.Name] = s
				doc := s.Doc
				if doc == nil {
					doc = gd.Doc
				}
				d.docs[s.Name.Name] = oneLine(doc.Text())
			case *ast.ValueSpec:
				id, ok := s.Type.(*ast.Ident)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, v := range s.Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						val, _ := strconv.Unquote(lit.Value)
						d.enums[id.Name] = append(d.enums[id.Name], val)
					}
				}
			}
		}
	}
	if _, ok := d.types["CloudConfig"]; !ok {
		return nil, fmt.Errorf("%s: no type CloudConfig", path)
	}
	return d, nil
}

// sections lists the objects of the cloud-config, depth first from the root.
func (d *configDoc) sections() ([]configSection, error) {
	var out []configSection
	var walk func(typeName, path string) error
	walk = func(typeName, path string) error {
		st, ok := d.types[typeName].Type.(*ast.StructType)
		if !ok {
			return fmt.Errorf("type %s is not a struct", typeName)
		}
		sec := configSection{path: path, typeName: typeName, doc: d.docs[typeName]}
		type child struct{ typeName, path string }
		var children []child
		for _, f := range st.Fields.List {
			name := jsonName(f)
			if name == "" {
				continue
			}
			p := name
			if path != "" {
				p = path + "." + name
			}
			typ, nested, list := d.describe(f.Type)
			if nested != "" {
				cp := p
				if list {
					cp += "[]"
				}
				children = append(children, child{nested, cp})
			}
			comment := oneLine(f.Doc.Text())
			def := "—"
			if m := defaultRE.FindStringSubmatch(comment); m != nil {
				def = m[1]
				comment = oneLine(strings.Replace(comment, strings.TrimSpace(m[0]), "", 1))
			} else if m := requiredRE.FindStringSubmatch(comment); m != nil {
				def = "required" + m[1]
			} else if mustRE.MatchString(comment) {
				def = "required"
			}
			sec.fields = append(sec.fields, configField{path: p, typ: typ, def: def, desc: comment})
		}
		out = append(out, sec)
		for _, c := range children {
			if err := walk(c.typeName, c.path); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk("CloudConfig", "")
}

// describe names a field's type as a cloud-config author writes it. nested is
// the package's struct type the field holds (alone or in a list).
func (d *configDoc) describe(e ast.Expr) (typ, nested string, list bool) {
	switch t := e.(type) {
	case *ast.StarExpr:
		return d.describe(t.X)
	case *ast.ArrayType:
		inner, n, _ := d.describe(t.Elt)
		if n != "" {
			return "list of objects", n, true
		}
		return "list of " + plural(inner), "", false
	case *ast.MapType:
		k, _, _ := d.describe(t.Key)
		v, _, _ := d.describe(t.Value)
		return "map of " + k + " to " + v, "", false
	case *ast.SelectorExpr:
		switch t.Sel.Name {
		case "Duration":
			return `duration ("90s", "2m")`, "", false
		case "LabelSelector":
			return "label selector (matchLabels, matchExpressions)", "", false
		case "NodeAddressType":
			return "node address type", "", false
		case "RawMessage":
			return "object (the power-state source's own fields)", "", false
		}
		return t.Sel.Name, "", false
	case *ast.Ident:
		switch t.Name {
		case "string":
			return "string", "", false
		case "bool":
			return "bool", "", false
		case "int", "int32", "int64", "uint16", "uint32", "uint64":
			return "integer", "", false
		}
		if vals, ok := d.enums[t.Name]; ok {
			q := make([]string, len(vals))
			for i, v := range vals {
				q[i] = "`" + v + "`"
			}
			return strings.Join(q, " or "), "", false
		}
		if ts, ok := d.types[t.Name]; ok {
			if _, isStruct := ts.Type.(*ast.StructType); isStruct {
				return "object", t.Name, false
			}
			return d.describe(ts.Type)
		}
		return t.Name, "", false
	}
	return fmt.Sprintf("%T", e), "", false
}

func plural(s string) string {
	if strings.HasSuffix(s, "string") {
		return s + "s"
	}
	return s
}

// jsonName is the field's name in the document, "" for fields it lacks.
func jsonName(f *ast.Field) string {
	if f.Tag == nil || len(f.Names) == 0 {
		return ""
	}
	tag, err := strconv.Unquote(f.Tag.Value)
	if err != nil {
		return ""
	}
	name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// noteRestarts adds each restart field's note to its section's text or its
// field's meaning; a restart field that names no section or field is an
// error, so that the table and the types cannot drift apart.
func noteRestarts(secs []configSection, restart []config.RestartField) error {
	for _, r := range restart {
		note := r.Note + restartsNote(r.Restarts)
		found := false
		for i := range secs {
			s := &secs[i]
			if s.path == r.Path {
				s.doc, found = s.doc+" "+note, true
			}
			for j := range s.fields {
				if f := &s.fields[j]; f.path == r.Path {
					f.desc, found = oneLine(f.desc+" "+note), true
				}
			}
		}
		if !found {
			return fmt.Errorf("config.RestartFields: %s is not a section or field of the cloud-config", r.Path)
		}
	}
	return nil
}

// restartsNote says which processes a change restarts by itself.
func restartsNote(r config.Role) string {
	var who []string
	if r&config.Replicas != 0 {
		who = append(who, "the replicas")
	}
	if r&config.Agents != 0 {
		who = append(who, "the node agents")
	}
	if len(who) == 0 {
		return ""
	}
	return " A change restarts " + strings.Join(who, " and ") + " by themselves (a clean stop; docs/configuration.md#changing-the-config)."
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func writeConfig(b *bytes.Buffer, d *configDoc) error {
	secs, err := d.sections()
	if err != nil {
		return err
	}
	if err := noteRestarts(secs, config.RestartFields); err != nil {
		return err
	}
	for _, s := range secs {
		title := "The document"
		if s.path != "" {
			title = "`" + s.path + "`"
		}
		fmt.Fprintf(b, "## %s\n\n%s (Go type `%s`.)\n\n", title, s.doc, s.typeName)
		b.WriteString("| field | type | default | meaning |\n| --- | --- | --- | --- |\n")
		for _, f := range s.fields {
			fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", f.path, cell(f.typ), cell(f.def), cell(f.desc))
		}
		b.WriteString("\n")
	}
	return nil
}
