package bench

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// powerLab plays the BMCs of the power-state scenario: one Redfish service
// (test/framework's, the DMTF mockup) behind one loopback endpoint per
// NotReady node, so that the source's state per BMC (session, cached
// answer, one question at a time) is what it would be with real BMCs, and
// one more endpoint that every Ready node's inventory entry names: the
// node lifecycle controller never asks about a Ready node, so that endpoint
// must see no request. Each endpoint counts its requests.
type powerLab struct {
	bmc *framework.RedfishBMC
	// endpoints are the NotReady nodes' BMCs; readyEndpoint the Ready
	// nodes' one.
	endpoints     []string
	readyEndpoint string
	// requests counts each NotReady node's BMC's requests; ready the
	// Ready nodes' endpoint's.
	requests []atomic.Int64
	ready    atomic.Int64
}

// startPowerLab serves notReady BMCs and the Ready nodes' endpoint, with
// the CA and credentials files in dir. On error nothing is left.
func startPowerLab(dir string, notReady int) (pl *powerLab, err error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("bench: power: %w", err)
	}
	bmc, err := framework.NewRedfishBMC(dir, "power", framework.RedfishOptions{})
	if err != nil {
		return nil, fmt.Errorf("bench: power: %w", err)
	}
	pl = &powerLab{bmc: bmc, requests: make([]atomic.Int64, notReady)}
	defer func() {
		if err != nil {
			pl.close()
		}
	}()
	serve := func(n *atomic.Int64) (string, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("bench: power: %w", err)
		}
		return bmc.ServeOn(ln, func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				next.ServeHTTP(w, r)
			})
		}), nil
	}
	for i := range pl.requests {
		ep, err := serve(&pl.requests[i])
		if err != nil {
			return pl, err
		}
		pl.endpoints = append(pl.endpoints, ep)
	}
	if pl.readyEndpoint, err = serve(&pl.ready); err != nil {
		return pl, err
	}
	return pl, nil
}

// hang makes every BMC hold its requests until the client gives up (or
// answer again, with false).
func (pl *powerLab) hang(on bool) { pl.bmc.SetFaults(framework.RedfishFaults{Hang: on}) }

// counts are the requests so far: all NotReady BMCs', how many of those
// BMCs were asked at all, and the Ready nodes' endpoint's.
func (pl *powerLab) counts() (total, asked, ready int64) {
	for i := range pl.requests {
		n := pl.requests[i].Load()
		total += n
		if n > 0 {
			asked++
		}
	}
	return total, asked, pl.ready.Load()
}

// inventory is the nodes section of the cloud-config: the source and its
// settings, and each node's machine with its BMC (the first NotReady ones
// with theirs, the others the Ready nodes' endpoint).
func (pl *powerLab) inventory(source, settings string, names []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "nodes:\n  powerState:\n    source: %s\n    settings: %s\n  inventory:\n", source, settings)
	for i, name := range names {
		ep := pl.readyEndpoint
		if i < len(pl.endpoints) {
			ep = pl.endpoints[i]
		}
		fmt.Fprintf(&b, "  - name: %s\n    powerState: {endpoint: %q, usernameFile: %q, passwordFile: %q, caFile: %q}\n",
			name, ep, pl.bmc.UserFile, pl.bmc.PasswordFile, pl.bmc.CAFile)
	}
	return b.String()
}

// close stops every endpoint; held requests end.
func (pl *powerLab) close() { pl.bmc.Close() }

// powerLabDir is where the lab's files are.
func powerLabDir(e *env) string { return filepath.Join(e.o.Dir, "power-bmc") }
