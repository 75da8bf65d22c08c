package bench

import (
	"fmt"
	"strings"
)

// Compare is a Markdown table of two runs side by side: every figure of
// either run, each run's value of it, and B's value as a multiple of A's. A
// scenario that failed, timed out or was skipped in a run says so, with its
// reason, in that run's column (a row of its own, and in place of each
// figure it lacks): a run that stopped early is never shown as blank cells
// that read like a figure nobody measured.
func Compare(a, b *Results) string {
	var out strings.Builder
	fmt.Fprintf(&out, "A: `%s` (%s, %s)  \nB: `%s` (%s, %s)\n\n",
		a.CCM, a.Profile, a.Started.UTC().Format("2006-01-02 15:04"), b.CCM, b.Profile, b.Started.UTC().Format("2006-01-02 15:04"))
	out.WriteString("| scenario | figure | A | B | B / A |\n| --- | --- | ---: | ---: | ---: |\n")
	for _, id := range scenarioIDs(a, b) {
		sa, sb := a.Scenario(id), b.Scenario(id)
		title := ""
		for _, s := range []*Scenario{sa, sb} {
			if s != nil && s.Title != "" {
				title = s.Title
				break
			}
		}
		stA, stB := outcome(sa), outcome(sb)
		if stA != "" || stB != "" {
			fmt.Fprintf(&out, "| %s | (outcome) | %s | %s |  |\n", title, orRan(stA), orRan(stB))
			title = ""
		}
		for _, key := range figureKeys(sa, sb) {
			fa, fb := figureOf(sa, key), figureOf(sb, key)
			name := ""
			if fa != nil {
				name = fa.Name
			} else {
				name = fb.Name
			}
			ratio := ""
			if fa != nil && fb != nil && fa.Value != 0 {
				ratio = fmt.Sprintf("%.2f", fb.Value/fa.Value)
			}
			fmt.Fprintf(&out, "| %s | %s | %s | %s | %s |\n", title, name, cell(fa, stA), cell(fb, stB), ratio)
			title = ""
		}
	}
	return out.String()
}

// scenarioIDs are the scenarios of a in order, then those only b has.
func scenarioIDs(a, b *Results) []string {
	var ids []string
	seen := map[string]bool{}
	for _, r := range []*Results{a, b} {
		for _, s := range r.Scenarios {
			if !seen[s.ID] {
				seen[s.ID] = true
				ids = append(ids, s.ID)
			}
		}
	}
	return ids
}

// figureKeys are the figures of a in order, then those only b has.
func figureKeys(a, b *Scenario) []string {
	var keys []string
	seen := map[string]bool{}
	for _, s := range []*Scenario{a, b} {
		if s == nil {
			continue
		}
		for _, f := range s.Figures {
			if !seen[f.Key] {
				seen[f.Key] = true
				keys = append(keys, f.Key)
			}
		}
	}
	return keys
}

func figureOf(s *Scenario, key string) *Figure {
	if s == nil {
		return nil
	}
	return s.Figure(key)
}

// outcome is why a scenario has no (or not every) figure: "failed: ...",
// "skipped: ...", "not run"; "" when it ran to its end.
func outcome(s *Scenario) string {
	switch {
	case s == nil:
		return "not run"
	case s.Error != "":
		return "failed: " + oneLine(s.Error)
	case s.Skipped != "":
		return "skipped: " + oneLine(s.Skipped)
	}
	return ""
}

func orRan(st string) string {
	if st == "" {
		return "ran"
	}
	return st
}

// cell is a figure's value, or why the run has none.
func cell(f *Figure, st string) string {
	switch {
	case f != nil:
		return value(f.Value, f.Unit)
	case st != "":
		return "— (" + st + ")"
	}
	return "— (not measured)"
}
