package chaos

import (
	"strings"
	"testing"
)

// TestMergeRows: a run of some faults replaces their rows and keeps the
// others, in the faults' order.
func TestMergeRows(t *testing.T) {
	const header = "| fault | scale | faults survived | requests lost | duplicates | IPs changed | time to recover (median / max) | result |\n" +
		"| --- | --- | --- | --- | --- | --- | --- | --- |\n"
	old := beginMarker + "\nProfile `full`, earlier.\n\n" + header +
		"| SIGKILL of the leader | a | 1 of 1 | n/a | 0 | 0 | 1s / 1s | pass |\n" +
		"| router restart | b | 1 of 1 | n/a | n/a | n/a | 1s / 1s | pass |\n" +
		"| node power-off (link down) | c | 1 of 1 | n/a | n/a | 0 | 9s / 9s | pass: old |\n"
	fresh := header + "| node power-off (link down) | c | 2 of 2 | n/a | n/a | 0 | 1s / 1s | pass: new |\n" +
		"| kube-apiserver restart | d | 1 of 1 | n/a | 0 | 0 | 1s / 1s | pass |\n"
	got, kept := mergeRows(old, fresh)
	want := header +
		"| SIGKILL of the leader | a | 1 of 1 | n/a | 0 | 0 | 1s / 1s | pass |\n" +
		"| kube-apiserver restart | d | 1 of 1 | n/a | 0 | 0 | 1s / 1s | pass |\n" +
		"| router restart | b | 1 of 1 | n/a | n/a | n/a | 1s / 1s | pass |\n" +
		"| node power-off (link down) | c | 2 of 2 | n/a | n/a | 0 | 1s / 1s | pass: new |\n"
	if got != want || kept != 2 {
		t.Errorf("kept %d, table:\n%s\nwant 2 kept and:\n%s", kept, got, want)
	}
	if strings.Contains(got, "pass: old") {
		t.Error("the run's own fault kept its old row")
	}
}
