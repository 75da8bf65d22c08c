package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Results is what one run measured; it is written as results.json.
type Results struct {
	// Started is when the run began.
	Started time.Time `json:"started"`
	// Profile names the sizes: "default", "smoke", "full" or "custom".
	Profile string `json:"profile"`
	// CCM is the command that ran as the CCM.
	CCM string `json:"ccm"`
	// Machine is where it ran.
	Machine Machine `json:"machine"`
	// Router says whether a BIRD router took part, and if not, why.
	Router string `json:"router"`
	// Scenarios in the order they ran.
	Scenarios []*Scenario `json:"scenarios"`
	// DurationSeconds is the wall time of the whole run.
	DurationSeconds float64 `json:"durationSeconds"`
}

// Machine describes the host of a run.
type Machine struct {
	CPUs      int     `json:"cpus"`
	MemoryGiB float64 `json:"memoryGiB"`
	Kernel    string  `json:"kernel"`
	GoVersion string  `json:"goVersion"`
}

// Scenario is the outcome of one scenario.
type Scenario struct {
	// ID is the stable name: health, agent, tor, l2agent, power, join, lb, churn,
	// endpoints or steady.
	ID string `json:"id"`
	// Title is the human name.
	Title string `json:"title"`
	// Size says what the scenario ran with, e.g. {"nodes": 1000}.
	Size map[string]int `json:"size"`
	// Skipped, when not empty, says why the scenario did not run.
	Skipped string `json:"skipped,omitempty"`
	// Error, when not empty, says why the scenario stopped early.
	Error string `json:"error,omitempty"`
	// Figures in the order they were measured.
	Figures []*Figure `json:"figures"`
	// Notes are remarks for the reader (figures left out, and why).
	Notes []string `json:"notes,omitempty"`
}

// Figure is one measured number.
type Figure struct {
	// Key is the stable, machine-readable name within the scenario.
	Key string `json:"key"`
	// Name is the human name.
	Name string `json:"name"`
	// Value in Unit.
	Value float64 `json:"value"`
	// Unit: "s", "ms", "MiB", "%", "req", "req/s", "count".
	Unit string `json:"unit"`
	// Floor is the same measure for the minimal API writes done by a
	// trivial client with the CCM's client limits (0: none).
	Floor float64 `json:"floor,omitempty"`
	// Ratio is Value / Floor (0: no floor).
	Ratio float64 `json:"ratio,omitempty"`
	// Goal, when set, is the figure the project aims at.
	Goal *Goal `json:"goal,omitempty"`
}

// Goal is a target for a figure, reported, never asserted.
type Goal struct {
	// Text says the goal, e.g. "≤ 1.5× floor".
	Text string `json:"text"`
	// Met says whether the figure reached it.
	Met bool `json:"met"`
	// Scaled says the run was smaller than the size the goal is stated for.
	Scaled bool `json:"scaled,omitempty"`
	// RatioLimit, when set, is the most the ratio to the floor may be.
	RatioLimit float64 `json:"ratioLimit,omitempty"`
}

// Scenario returns the scenario with the given ID, or nil.
func (r *Results) Scenario(id string) *Scenario {
	for _, s := range r.Scenarios {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// Figure returns the figure with the given key, or nil.
func (s *Scenario) Figure(key string) *Figure {
	for _, f := range s.Figures {
		if f.Key == key {
			return f
		}
	}
	return nil
}

// add appends a figure and returns it, for adding a floor or a goal.
func (s *Scenario) add(key, name string, value float64, unit string) *Figure {
	f := &Figure{Key: key, Name: name, Value: value, Unit: unit}
	s.Figures = append(s.Figures, f)
	return f
}

func (s *Scenario) notef(format string, args ...any) {
	s.Notes = append(s.Notes, fmt.Sprintf(format, args...))
}

// withFloor sets the floor and the ratio to it.
func (f *Figure) withFloor(floor float64) *Figure {
	f.Floor = floor
	if floor > 0 {
		f.Ratio = f.Value / floor
	}
	return f
}

// atMost sets the goal that the value stays at or under limit.
func (f *Figure) atMost(limit float64, text string, scaled bool) *Figure {
	f.Goal = &Goal{Text: text, Met: f.Value <= limit, Scaled: scaled}
	return f
}

// ratioAtMost sets the goal that the ratio to the floor stays at or under limit.
func (f *Figure) ratioAtMost(limit float64, scaled bool) *Figure {
	f.Goal = &Goal{Text: fmt.Sprintf("≤ %g× floor", limit), Met: f.Ratio > 0 && f.Ratio <= limit, Scaled: scaled, RatioLimit: limit}
	return f
}

// Write writes results.json and results.md into dir and returns the Markdown.
func (r *Results) Write(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(data, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	md := r.Markdown()
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(md), 0o600); err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	return md, nil
}

// ReadResults reads a results.json.
func ReadResults(path string) (*Results, error) {
	data, err := os.ReadFile(path) //nolint:gosec // a path the user names
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	var r Results
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("read results %s: %w", path, err)
	}
	return &r, nil
}

// Markdown is the results as a Markdown table, with the run's context above
// it and the scenarios' notes below.
func (r *Results) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s, profile %s, %.0f s; CCM: `%s`; machine: %d CPUs, %.0f GiB, %s, %s; router: %s.\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Profile, r.DurationSeconds, r.CCM,
		r.Machine.CPUs, r.Machine.MemoryGiB, r.Machine.Kernel, r.Machine.GoVersion, r.Router)
	b.WriteString("| scenario | figure | value | floor | × floor | goal | |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | --- | --- |\n")
	for _, s := range r.Scenarios {
		title := s.Title + " (" + sizeText(s.Size) + ")"
		switch {
		case s.Skipped != "":
			fmt.Fprintf(&b, "| %s | skipped: %s | | | | | |\n", title, s.Skipped)
			continue
		case len(s.Figures) == 0 && s.Error != "":
			fmt.Fprintf(&b, "| %s | failed: %s | | | | | |\n", title, oneLine(s.Error))
			continue
		}
		for i, f := range s.Figures {
			name := title
			if i > 0 {
				name = ""
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n",
				name, f.Name, value(f.Value, f.Unit), floorText(f), ratioText(f), goalText(f.Goal), metText(f.Goal))
		}
		if s.Error != "" {
			fmt.Fprintf(&b, "| | failed: %s | | | | | |\n", oneLine(s.Error))
		}
	}
	var notes []string
	for _, s := range r.Scenarios {
		for _, n := range s.Notes {
			notes = append(notes, fmt.Sprintf("- %s: %s", s.Title, n))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n" + strings.Join(notes, "\n") + "\n")
	}
	return b.String()
}

func sizeText(size map[string]int) string {
	var parts []string
	for _, k := range []string{"nodes", "services", "labNodes", "changes"} {
		if n, ok := size[k]; ok {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	if n, ok := size["idleSeconds"]; ok {
		parts = append(parts, fmt.Sprintf("%d s idle", n))
	}
	return strings.Join(parts, ", ")
}

func value(v float64, unit string) string {
	switch unit {
	case "s":
		if v < 10 {
			return fmt.Sprintf("%.2f s", v)
		}
		return fmt.Sprintf("%.1f s", v)
	case "ms":
		return fmt.Sprintf("%.1f ms", v)
	case "count", "req":
		return fmt.Sprintf("%.0f", v)
	case "%", "MiB", "req/s", "per item":
		return fmt.Sprintf("%.1f %s", v, unit)
	default:
		return fmt.Sprintf("%.3g %s", v, unit)
	}
}

func floorText(f *Figure) string {
	if f.Floor == 0 {
		return ""
	}
	return value(f.Floor, f.Unit)
}

func ratioText(f *Figure) string {
	switch {
	case f.Ratio == 0:
		return ""
	case f.Goal != nil && f.Goal.RatioLimit > 0:
		// Two decimals where a goal is on the ratio: 1.22× missing
		// "≤ 1.2×" must not read 1.2×.
		return fmt.Sprintf("%.2f×", f.Ratio)
	}
	return fmt.Sprintf("%.1f×", f.Ratio)
}

func goalText(g *Goal) string {
	if g == nil {
		return ""
	}
	return g.Text
}

func metText(g *Goal) string {
	switch {
	case g == nil:
		return ""
	case g.Met && g.Scaled:
		return "met (scaled-down run)"
	case g.Met:
		return "**met**"
	case g.Scaled:
		return "missed (scaled-down run)"
	default:
		return "**missed**"
	}
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
