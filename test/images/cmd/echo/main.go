// Command echo is the tests' HTTP workload: it answers every request with its
// pod's name, node and IP (from the Downward API's POD_NAME, NODE_NAME and
// POD_IP) and the client's address, as JSON; /healthz answers 200; /fetch?url=URL
// answers what a GET of URL from the pod answers. It shows a
// test which pod served a request and what source address reached it.
//
// It exits 0 on SIGTERM or SIGINT, after the requests in flight.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	port := flag.Int("port", 8080, "TCP port to serve HTTP on, on all addresses (IPv4 and IPv6)")
	flag.Parse()
	if err := run(*port); err != nil {
		log.Fatal(err)
	}
}

func run(port int) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("echo: %w", err)
	}
	srv := &http.Server{Handler: newHandler(identityFromEnv()), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("echo: %w", err)
	case <-ctx.Done():
	}
	// Short: the kubelet's grace period is longer, and tests wait for it.
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("echo: shutdown: %w", err)
	}
	return nil
}
