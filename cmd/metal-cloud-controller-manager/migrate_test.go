package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// TestMigrateCommand runs the subcommands as an operator would: files,
// standard input, --output and --report, and the flags' checks.
func TestMigrateCommand(t *testing.T) {
	metallbExample := filepath.Join("..", "..", "pkg", "migrate", "metallb", "testdata", "example.yaml")
	kubevipExample := filepath.Join("..", "..", "pkg", "migrate", "kubevip", "testdata", "example.yaml")
	stdin, err := os.ReadFile(kubevipExample) //nolint:gosec // testdata
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name       string
		args       []string
		wantErr    string
		wantReport string // a line of the report
		outFile    string // where --output writes, else standard output
	}{
		{name: "metallb from a file", args: []string{"metallb", "-f", metallbExample}, wantReport: "BGPPeer metallb-system/reflector: spec.vrf:"},
		{name: "metallb with replicas", args: []string{"metallb", "-f", metallbExample, "--announce-from", "Replicas"}, wantReport: "spec.nodeSelectors: no equivalent with announceFrom Replicas"},
		{name: "kube-vip from standard input", args: []string{"kube-vip", "-f", "-"}, wantReport: "data.search-order: no equivalent"},
		{name: "kube-vip to files", args: []string{"kube-vip", "-f", kubevipExample, "--announce", "BGP", "-o", filepath.Join(dir, "out.yaml"), "--report", filepath.Join(dir, "report.txt")},
			outFile: filepath.Join(dir, "out.yaml"), wantReport: "add bgp.asn and bgp.peers by hand"},
		{name: "nothing to read", args: []string{"metallb"}, wantErr: "nothing to read"},
		{name: "bad announce-from", args: []string{"metallb", "-f", metallbExample, "--announce-from", "Speakers"}, wantErr: `--announce-from "Speakers"`},
		{name: "bad announce", args: []string{"kube-vip", "-f", "-", "--announce", "ARP"}, wantErr: `--announce "ARP"`},
		{name: "missing file", args: []string{"metallb", "-f", filepath.Join(dir, "none.yaml")}, wantErr: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newMigrateCommand()
			var stdout, stderr bytes.Buffer
			cmd.SetArgs(tc.args)
			cmd.SetIn(bytes.NewReader(stdin))
			cmd.SetOut(&stdout)
			cmd.SetErr(&stderr)
			err := cmd.Execute()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, report := stdout.Bytes(), stderr.String()
			if tc.outFile != "" {
				if out, err = os.ReadFile(tc.outFile); err != nil {
					t.Fatal(err)
				}
				r, err := os.ReadFile(filepath.Join(dir, "report.txt")) //nolint:gosec // the test's own temporary file
				if err != nil {
					t.Fatal(err)
				}
				report = string(r)
			}
			if _, err := config.Parse(out); err != nil {
				t.Errorf("the output is refused: %v\n%s", err, out)
			}
			if !strings.Contains(report, tc.wantReport) {
				t.Errorf("report misses %q:\n%s", tc.wantReport, report)
			}
		})
	}
}
