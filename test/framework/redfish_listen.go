package framework

import (
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"time"
)

// ServeOn serves the BMC on ln too, with its certificate, each request
// through wrap (which may count it, then call next), until Close. It
// returns the endpoint, https://ln's address. One service behind many
// endpoints is how the benchmarks play many BMCs: a power-state source
// keeps its state (session, cache, one question at a time) per endpoint.
func (b *RedfishBMC) ServeOn(ln net.Listener, wrap func(next http.Handler) http.Handler) string {
	srv := &http.Server{
		Handler:           wrap(b),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	b.mu.Lock()
	b.extra = append(b.extra, srv)
	b.mu.Unlock()
	cfg := b.server.TLS.Clone()
	go func() { _ = srv.Serve(tls.NewListener(ln, cfg)) }()
	return "https://" + ln.Addr().String()
}
