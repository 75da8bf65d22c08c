package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// metric is one metric a package defines with k8s.io/component-base/metrics.
type metric struct {
	name, typ, help string
	labels          []string
}

// metricKinds maps the constructors of component-base/metrics to types.
var metricKinds = map[string]string{
	"NewCounter": "counter", "NewCounterVec": "counter",
	"NewGauge": "gauge", "NewGaugeVec": "gauge",
	"NewHistogram": "histogram", "NewHistogramVec": "histogram",
	"NewSummary": "summary", "NewSummaryVec": "summary",
}

// loadMetrics finds the metrics defined in the non-test files of dir: calls
// of metrics.NewCounter(Vec) and the like with their options, and
// metrics.NewDesc descriptors of custom collectors, typed by the
// NewLazyConstMetric calls that use them.
func loadMetrics(dir string) ([]metric, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, fmt.Errorf("load metrics: %w", err)
	}
	fset := token.NewFileSet()
	var parsed []*ast.File
	consts := map[string]string{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
		parsed = append(parsed, f)
		for _, decl := range f.Decls {
			if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.CONST {
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								consts[n.Name], _ = strconv.Unquote(lit.Value)
							}
						}
					}
				}
			}
		}
	}
	ev := func(e ast.Expr) string { return evalString(e, consts) }
	var out []metric
	descs := map[string]*metric{}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if i >= len(n.Values) {
						continue
					}
					if call, ok := n.Values[i].(*ast.CallExpr); ok && calls(call, "NewDesc") && len(call.Args) >= 3 {
						descs[name.Name] = &metric{name: ev(call.Args[0]), help: ev(call.Args[1]), labels: stringList(call.Args[2], ev)}
					}
				}
			case *ast.CallExpr:
				for fn, typ := range metricKinds {
					if calls(n, fn) && len(n.Args) >= 1 {
						m := fromOpts(n.Args[0], ev)
						m.typ = typ
						if len(n.Args) >= 2 {
							m.labels = stringList(n.Args[1], ev)
						}
						out = append(out, m)
					}
				}
			}
			return true
		})
	}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && calls(call, "NewLazyConstMetric") && len(call.Args) >= 2 {
				if id, ok := call.Args[0].(*ast.Ident); ok && descs[id.Name] != nil {
					if sel, ok := call.Args[1].(*ast.SelectorExpr); ok {
						descs[id.Name].typ = strings.ToLower(strings.TrimSuffix(sel.Sel.Name, "Value"))
					}
				}
			}
			return true
		})
	}
	for _, d := range descs {
		out = append(out, *d)
	}
	for _, m := range out {
		if m.name == "" || m.typ == "" {
			return nil, fmt.Errorf("%s: a metric whose name or type gendocs cannot read: %+v", dir, m)
		}
	}
	slices.SortFunc(out, func(a, b metric) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// calls reports whether call is metrics.<fn>(...).
func calls(call *ast.CallExpr, fn string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != fn {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "metrics"
}

// fromOpts reads the name and help of &metrics.XOpts{...}.
func fromOpts(e ast.Expr, ev func(ast.Expr) string) metric {
	if u, ok := e.(*ast.UnaryExpr); ok {
		e = u.X
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return metric{}
	}
	parts := map[string]string{}
	for _, el := range lit.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok {
				parts[k.Name] = ev(kv.Value)
			}
		}
	}
	var name []string
	for _, k := range []string{"Namespace", "Subsystem", "Name"} {
		if parts[k] != "" {
			name = append(name, parts[k])
		}
	}
	return metric{name: strings.Join(name, "_"), help: parts["Help"]}
}

// evalString evaluates a constant string expression: literals, the
// package's string constants, and their sums.
func evalString(e ast.Expr, consts map[string]string) string {
	switch e := e.(type) {
	case *ast.BasicLit:
		s, _ := strconv.Unquote(e.Value)
		return s
	case *ast.Ident:
		return consts[e.Name]
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			return evalString(e.X, consts) + evalString(e.Y, consts)
		}
	case *ast.ParenExpr:
		return evalString(e.X, consts)
	}
	return ""
}

func stringList(e ast.Expr, ev func(ast.Expr) string) []string {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	var out []string
	for _, el := range lit.Elts {
		out = append(out, ev(el))
	}
	return out
}

// checkMetricsDocumented fails when the hand-written docs/metrics.md does
// not mention a metric the code defines.
func checkMetricsDocumented(mets []metric, path string) error {
	data, err := os.ReadFile(path) //nolint:gosec // a file of this repository
	if err != nil {
		return fmt.Errorf("check metrics documented: %w", err)
	}
	var missing []string
	for _, m := range mets {
		if !strings.Contains(string(data), "`"+m.name+"`") {
			missing = append(missing, m.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s does not document %s: add them (type, labels, meaning, which replica reports them)", path, strings.Join(missing, ", "))
	}
	return nil
}

func writeMetrics(b *bytes.Buffer, mets []metric) {
	b.WriteString("| metric | type | labels | help |\n| --- | --- | --- | --- |\n")
	for _, m := range mets {
		labels := "none"
		if len(m.labels) > 0 {
			labels = "`" + strings.Join(m.labels, "`, `") + "`"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", m.name, m.typ, labels, cell(m.help))
	}
}
