package netlab

import (
	"net/netip"
	"strconv"
	"strings"
)

// BirdProtocol is one protocol of `birdc show protocols`: its row, and with
// `show protocols all` the details indented below it. Every reader of that
// output (session states, the bench's import counts, a ToR's ADD-PATH
// capability) goes through ParseBirdProtocols, so that a change of BIRD's
// format is fixed in one place.
type BirdProtocol struct {
	// Name, Proto and State are the row's first columns, with Table
	// between Proto and State ("spk4_0", "BGP", "up").
	Name, Proto, State string
	// Info is the row's sixth field, "" without one: with BIRD's default
	// time format (one word in Since) the first word of Info, for BGP the
	// session's state ("Established", "Active").
	Info string
	// ImportUpdates and ImportWithdraws hold, per channel, the "received"
	// column of "Import updates" and "Import withdraws" (show protocols
	// all); a channel whose column is not a number adds nothing.
	ImportUpdates, ImportWithdraws []float64
	// LocalAddPathRx is whether BIRD's own capabilities ("Local
	// capabilities", not the neighbor's) include ADD-PATH with a receiving
	// family ("RX: ipv4"); show protocols all of an established session.
	LocalAddPathRx bool
	// NeighborID is the BGP neighbor's router ID ("Neighbor ID", show
	// protocols all of an established session), "" without one.
	NeighborID string
	// GracefulRestart is whether the neighbor's graceful restart is in
	// progress ("Neighbor graceful restart active"): from the end of its
	// session, which BIRD keeps the routes of, until an End-of-RIB on each
	// of its channels in the new session (or the restart's timers end).
	GracefulRestart bool
	// Imported holds, per channel, the routes it holds ("Routes: N
	// imported"; stale ones kept through a restart included).
	Imported []int
}

// SessionState is a BGP protocol's session state in the words both routers
// use: Info ("Established", "Active", ...), or State ("start", "up",
// "down") when the row has no Info.
func (p BirdProtocol) SessionState() string {
	if p.Info != "" {
		return p.Info
	}
	return p.State
}

// ParseBirdProtocols reads the output of `birdc show protocols [all]`: a
// protocol per unindented row of at least four fields (birdc's greeting and
// the header row are skipped), and the indented lines after a row as its
// details.
func ParseBirdProtocols(out string) []BirdProtocol {
	var ps []BirdProtocol
	var details []string // of the last protocol in ps
	finish := func() {
		if len(ps) > 0 {
			birdProtocolDetails(&ps[len(ps)-1], details)
		}
		details = nil
	}
	inRow := false
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if inRow {
				details = append(details, line)
			}
			continue
		}
		finish()
		fields := strings.Fields(line)
		inRow = len(fields) >= 4 && (fields[0] != "Name" || fields[1] != "Proto")
		if !inRow {
			continue
		}
		p := BirdProtocol{Name: fields[0], Proto: fields[1], State: fields[3]}
		if len(fields) > 5 {
			p.Info = fields[5]
		}
		ps = append(ps, p)
	}
	finish()
	return ps
}

// birdProtocolDetails fills p from the indented lines below its row.
func birdProtocolDetails(p *BirdProtocol, lines []string) {
	for _, line := range lines {
		fields := strings.Fields(line)
		if len(fields) == 3 && fields[0] == "Neighbor" && fields[1] == "ID:" {
			p.NeighborID = fields[2]
		}
		if strings.Join(fields, " ") == "Neighbor graceful restart active" {
			p.GracefulRestart = true
		}
		if len(fields) >= 3 && fields[0] == "Routes:" && fields[2] == "imported," {
			if n, err := strconv.Atoi(fields[1]); err == nil {
				p.Imported = append(p.Imported, n)
			}
		}
		if len(fields) < 3 || fields[0] != "Import" {
			continue
		}
		v, err := strconv.ParseFloat(fields[2], 64)
		switch {
		case err != nil:
		case fields[1] == "updates:":
			p.ImportUpdates = append(p.ImportUpdates, v)
		case fields[1] == "withdraws:":
			p.ImportWithdraws = append(p.ImportWithdraws, v)
		}
	}
	// The local capabilities come first; an ADD-PATH there lists its
	// receiving families on the next "RX:" line (empty: none).
	local, _, _ := strings.Cut(strings.Join(lines, "\n"), "Neighbor capabilities")
	if _, after, ok := strings.Cut(local, "ADD-PATH"); ok {
		for _, line := range strings.Split(after, "\n") {
			if rx, ok := strings.CutPrefix(strings.TrimSpace(line), "RX:"); ok {
				p.LocalAddPathRx = strings.TrimSpace(rx) != ""
				break
			}
		}
	}
}

// birdSessionStates maps the neighbor address of each BGP protocol in out
// (`birdc show protocols`) that peerAddr knows to its session state.
func birdSessionStates(out string, peerAddr func(protocol string) (netip.Addr, bool)) map[netip.Addr]string {
	states := map[netip.Addr]string{}
	for _, p := range ParseBirdProtocols(out) {
		if p.Proto != "BGP" {
			continue
		}
		if addr, ok := peerAddr(p.Name); ok {
			states[addr] = p.SessionState()
		}
	}
	return states
}
