// Command gendashboard writes the chart's Grafana dashboard
// (deploy/chart/metal-ccm/dashboards/metal-ccm.json) from the code in this
// folder, built with Grafana's dashboards-as-code library
// (grafana-foundation-sdk): panels are Go values, so a query, a unit or a
// threshold is changed in one place and reviewed as code, and the JSON is
// never edited by hand. Only this command imports the library; the manager
// and the node agent do not link it.
//
//	go run ./hack/gendashboard -out deploy/chart/metal-ccm/dashboards/metal-ccm.json
//
// hack/gen-dashboard.sh runs it; hack/verify.d/dashboard.sh fails when the
// committed JSON differs from a fresh run. docs/dashboard.md describes each
// panel.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
)

func main() {
	out := flag.String("out", "deploy/chart/metal-ccm/dashboards/metal-ccm.json", "the file to write")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintf(os.Stderr, "gendashboard: %v\n", err)
		os.Exit(1)
	}
}

func run(out string) error {
	d, err := build().Build()
	if err != nil {
		return fmt.Errorf("build the dashboard: %w", err)
	}
	number(&d)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	// PromQL's comparison operators stay readable in the file (no \u003e).
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("encode the dashboard: %w", err)
	}
	return os.WriteFile(out, b.Bytes(), 0o644) //nolint:gosec // a file of the chart, read by everyone
}
