// Command bfdpeer is the BFD peer of the bench's BFD scenario
// (docs/performance.md): single-hop sessions of pkg/bgp/bfd, one from each
// of -count addresses from -first, all with -remote, until SIGTERM. It plays
// the routers' side: the measured process's sessions need a peer that
// answers, and this one runs the same RFC 5880 state machine as they do.
//
//	bfdpeer -remote 198.18.115.1 -first 198.18.115.2 -count 50 -interval 300ms -multiplier 3
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/bfd"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bfdpeer: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	remote := flag.String("remote", "", "the measured process's address (each session's peer)")
	first := flag.String("first", "", "the first local address; the others follow it")
	count := flag.Int("count", 1, "sessions, one per local address")
	interval := flag.Duration("interval", 300*time.Millisecond, "Required Min RX and Desired Min TX Interval")
	mult := flag.Uint("multiplier", 3, "Detect Mult")
	flag.Parse()
	peer, err := netip.ParseAddr(*remote)
	if err != nil {
		return fmt.Errorf("-remote: %w", err)
	}
	local, err := netip.ParseAddr(*first)
	if err != nil {
		return fmt.Errorf("-first: %w", err)
	}
	if *count < 1 || *mult < 1 || *mult > 255 {
		return errors.New("-count must be at least 1 and -multiplier from 1 to 255")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	logger := klog.Background()
	var wg sync.WaitGroup
	for range *count {
		s := bfd.New(bfd.Config{Peer: peer, Local: local, MinRx: *interval, MinTx: *interval, Multiplier: uint8(*mult)},
			logger, nil)
		wg.Go(func() { s.Run(ctx) })
		local = local.Next()
	}
	logger.Info("BFD peer running", "remote", peer, "sessions", *count, "interval", *interval, "multiplier", *mult)
	wg.Wait()
	return nil
}
