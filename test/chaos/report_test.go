package chaos

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// result is one row of the table: one kind of fault and what it cost.
type result struct {
	fault string
	scale string
	// injected and survived count the faults (kills, restarts, flaps, cuts).
	injected, survived int
	// requests and lost are of the client's request loop; -1: no loop ran.
	requests, lost int
	duplicates     int
	changed        int
	// recovery holds one duration per fault injected.
	recovery []time.Duration
	// limit is the recovery time the fault must stay within, if any.
	limit time.Duration
	note  string
	pass  bool
	// skipped says why the fault was not injected here.
	skipped string
}

var (
	resultsMu sync.Mutex
	results   []result
)

// faultOrder is the order of the table's rows, by the start of their fault.
var faultOrder = []string{"SIGKILL", "SIGTERM", "kube-apiserver", "router", "BGP", "follower", "leader", "config reload: a new", "config reload: an invalid",
	"node power-off (", "node power-off,", "node agent rolling", "machine powered off through its BMC", "BMC unreachable", "kubelet frozen", "L2: the answering node's agent", "L2: the answering node powered", "L2: the answering node cut",
	"L2: the answering node's kube-proxy", "L2: failback", "L2: rogue", "out-of-pool"}

func rank(fault string) int {
	for i, p := range faultOrder {
		if strings.HasPrefix(fault, p) {
			return i
		}
	}
	return len(faultOrder)
}

// tally counts one fault injected: survived, with how long recovery took,
// unless err says otherwise.
func (r *result) tally(took time.Duration, err error) {
	r.injected++
	if err == nil {
		r.survived++
		r.recovery = append(r.recovery, took)
	}
}

// record adds a row to the table.
func record(r result) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	results = append(results, r)
	slices.SortStableFunc(results, func(a, b result) int { return rank(a.fault) - rank(b.fault) })
}

func (r result) recoveryText() string {
	if len(r.recovery) == 0 {
		return "n/a"
	}
	s := slices.Clone(r.recovery)
	slices.Sort(s)
	text := fmt.Sprintf("%s / %s", s[(len(s)-1)/2].Round(10*time.Millisecond), s[len(s)-1].Round(10*time.Millisecond))
	if r.limit > 0 {
		text += fmt.Sprintf(" (limit %s)", r.limit)
	}
	return text
}

func orNA(n int) string {
	if n < 0 {
		return "n/a"
	}
	return fmt.Sprint(n)
}

// table is the results as a Markdown table.
func table() string {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	var b strings.Builder
	b.WriteString("| fault | scale | faults survived | requests lost | duplicates | IPs changed | time to recover (median / max) | result |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range results {
		req := "n/a"
		if r.requests >= 0 {
			req = fmt.Sprintf("%d of %d", r.lost, r.requests)
		}
		verdict := "pass"
		switch {
		case r.skipped != "":
			verdict = "skipped"
			r.note = r.skipped
		case !r.pass:
			verdict = "FAIL"
		}
		if r.note != "" {
			verdict += ": " + r.note
		}
		fmt.Fprintf(&b, "| %s | %s | %d of %d | %s | %s | %s | %s | %s |\n", r.fault, r.scale, r.survived, r.injected,
			req, orNA(r.duplicates), orNA(r.changed), r.recoveryText(), verdict)
	}
	return b.String()
}

// report prints the table.
func report(w io.Writer) {
	_, _ = fmt.Fprintf(w, "\nchaos profile %s:\n\n%s\n", prof.name, table())
}

// Markers of the table in docs/reliability.md.
const (
	beginMarker = "<!-- chaos-table:begin -->"
	endMarker   = "<!-- chaos-table:end -->"
)

// writeReport replaces the table between the markers of the file at path.
func writeReport(path string) error {
	data, err := os.ReadFile(path) //nolint:gosec // the report named by CHAOS_REPORT
	if err != nil {
		return fmt.Errorf("write chaos report: %w", err)
	}
	text := string(data)
	begin, end := strings.Index(text, beginMarker), strings.Index(text, endMarker)
	if begin < 0 || end < begin {
		return fmt.Errorf("write chaos report: %s lacks %s ... %s", path, beginMarker, endMarker)
	}
	tbl, kept := mergeRows(text[begin:end], table())
	note := ""
	if kept > 0 {
		note = fmt.Sprintf(" %d rows are of faults this run did not inject, kept from an earlier run.", kept)
	}
	section := fmt.Sprintf("%s\nProfile `%s`, %s, on %s.%s\n\n%s", beginMarker, prof.name,
		time.Now().UTC().Format("2006-01-02"), machine(), note, tbl)
	out := text[:begin] + section + text[end:]
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil { //nolint:gosec // documentation, world-readable
		return fmt.Errorf("write chaos report: %w", err)
	}
	return nil
}

// mergeRows is the table fresh (this run's) with the rows of old (the
// report's current table) whose fault this run did not record, in the
// faults' order, and how many rows were kept: a run of some tests (-run)
// replaces their rows and leaves the others.
func mergeRows(old, fresh string) (string, int) {
	lines := strings.Split(strings.TrimRight(fresh, "\n"), "\n")
	header, rows := lines[:2], lines[2:]
	seen := map[string]bool{}
	for _, r := range rows {
		seen[rowFault(r)] = true
	}
	kept := 0
	for i, l := range strings.Split(old, "\n") {
		if i == 0 || !strings.HasPrefix(l, "| ") || strings.HasPrefix(l, header[0][:8]) || strings.HasPrefix(l, "| ---") {
			continue
		}
		if f := rowFault(l); !seen[f] {
			rows = append(rows, l)
			kept++
		}
	}
	slices.SortStableFunc(rows, func(a, b string) int { return rank(rowFault(a)) - rank(rowFault(b)) })
	return strings.Join(append(header, rows...), "\n") + "\n", kept
}

// rowFault is the fault a table row is of (its first cell).
func rowFault(row string) string {
	f, _, _ := strings.Cut(strings.TrimPrefix(row, "| "), " |")
	return f
}

// machine says what the figures were measured on.
func machine() string {
	lab := "the BIRD router lab"
	if labSkip != "" {
		lab = "no router lab (" + labSkip + ")"
	}
	return fmt.Sprintf("%d cores, %s", runtime.NumCPU(), lab)
}
