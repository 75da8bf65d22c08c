package healthcheck

import (
	"net/netip"
	"time"
)

// Pinger is pinger for the external tests (ping_test.go), which use the
// test framework's network namespaces (the framework imports this package).
type Pinger = pinger

func (p *pinger) Open(v6 bool) error {
	_, err := p.conn(v6)
	return err
}

func (p *pinger) Ping(addrs []netip.Addr, deadline time.Time) ([]bool, error) {
	return p.ping(addrs, deadline)
}

func (p *pinger) Close() { p.close() }
