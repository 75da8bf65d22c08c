package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
)

// flagSection is one named flag set of the manager's --help.
type flagSection struct {
	name  string
	flags []flagDoc
}

type flagDoc struct {
	name, short, typ, def, usage string
}

var (
	sectionRE  = regexp.MustCompile(`^(\S.*) flags:$`)
	flagLineRE = regexp.MustCompile(`^\s+(?:-(\w), )?--([\w.-]+)(?: (\S+))?\s{2,}(.*)$`)
	flagOnlyRE = regexp.MustCompile(`^\s+(?:-(\w), )?--([\w.-]+)(?: (\S+))?$`)
	trailDefRE = regexp.MustCompile(`\s*\(default (.*)\)$`)
)

// loadFlags runs the manager's --help and reads its named flag sets. Run
// with its output not a terminal, the help is not wrapped: each flag is one
// line, continued only where its usage has line breaks.
func loadFlags(bin string) ([]flagSection, error) {
	secs, err := helpSections(bin)
	if err != nil {
		return nil, err
	}
	// The subcommands print their own flag sets the same way; their
	// sections are named after them.
	for _, sub := range subcommands {
		subSecs, err := helpSections(bin, strings.Fields(sub)...)
		if err != nil {
			return nil, err
		}
		for i := range subSecs {
			subSecs[i].name = "`" + sub + "`: " + subSecs[i].name
		}
		secs = append(secs, subSecs...)
	}
	return secs, nil
}

// subcommands are the manager's subcommands that have flags of their own.
var subcommands = []string{"migrate metallb", "migrate kube-vip"}

func helpSections(bin string, args ...string) ([]flagSection, error) {
	args = append(args, "--help")
	out, err := exec.Command(bin, args...).Output() //nolint:gosec // the manager built by hack/gen-docs.sh
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), err)
	}
	secs := parseHelp(string(out))
	if len(secs) == 0 {
		return nil, fmt.Errorf("%s %s: no flag sections found", bin, strings.Join(args, " "))
	}
	return secs, nil
}

func parseHelp(help string) []flagSection {
	var secs []flagSection
	var cur *flagDoc
	indent := 0
	finish := func() {
		if cur == nil {
			return
		}
		if m := trailDefRE.FindStringSubmatch(cur.usage); m != nil {
			cur.def = m[1]
			cur.usage = strings.TrimSuffix(cur.usage, m[0])
		}
		s := &secs[len(secs)-1]
		s.flags = append(s.flags, *cur)
		cur = nil
	}
	for _, line := range strings.Split(help, "\n") {
		if m := sectionRE.FindStringSubmatch(line); m != nil {
			finish()
			secs = append(secs, flagSection{name: m[1]})
			continue
		}
		if len(secs) == 0 || strings.TrimSpace(line) == "" {
			continue
		}
		m := flagLineRE.FindStringSubmatch(line)
		if m == nil {
			m = flagOnlyRE.FindStringSubmatch(line)
			if m != nil {
				m = append(m, "")
			}
		}
		// A usage line that only looks like a flag is indented to the usage column.
		if m != nil && (cur == nil || leading(line) < indent) {
			finish()
			cur = &flagDoc{short: m[1], name: m[2], typ: m[3], usage: m[4]}
			indent = len(line) - len(m[4])
			continue
		}
		if cur != nil {
			cur.usage += "\n" + strings.TrimSpace(line)
		}
	}
	finish()
	return secs
}

func leading(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }

func writeFlags(b *bytes.Buffer, secs []flagSection) {
	for _, s := range secs {
		fmt.Fprintf(b, "## %s flags\n\n| flag | type | default | meaning |\n| --- | --- | --- | --- |\n", s.name)
		for _, f := range s.flags {
			name := "`--" + f.name + "`"
			if f.short != "" {
				name = "`-" + f.short + "`, " + name
			}
			typ := f.typ
			if typ == "" {
				typ = "bool"
			}
			def := f.def
			if def == "" {
				def = "—"
			} else {
				def = "`" + def + "`"
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, cell(typ), cell(def), cell(f.usage))
		}
		b.WriteString("\n")
	}
}
