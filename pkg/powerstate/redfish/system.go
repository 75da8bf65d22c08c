package redfish

import (
	"context"
	"errors"

	"github.com/metal-ccm/metal-ccm/pkg/redfish"
)

// system reads the system b selects, through the BMC's client (made again
// when b's settings changed). The system's URI is kept once found, so that
// a question is one GET; a URI that no longer leads to that system is
// looked for again.
func (st *bmcState) system(ctx context.Context, b bmc, cfg settings) (*redfish.ComputerSystem, error) {
	c, err := st.clientFor(b, cfg)
	if err != nil {
		return nil, err
	}
	if uri, ok := st.systems[b.system]; ok {
		cs, err := c.System(ctx, uri)
		if err == nil && b.system.Matches(cs) {
			return cs, nil
		}
		if err != nil && !errors.Is(err, redfish.ErrNotFound) {
			return nil, err
		}
		delete(st.systems, b.system)
	}
	cs, err := c.FindSystem(ctx, b.system)
	if err != nil {
		return nil, err
	}
	st.systems[b.system] = cs.ODataID
	return cs, nil
}

// clientFor is the BMC's client, made again when the settings it was made
// from changed (a rotated password, another CA); the old one's session is
// ended in the background.
func (st *bmcState) clientFor(b bmc, cfg settings) (*redfish.Client, error) {
	if c := st.client.Load(); c != nil && st.fingerprint == b.fingerprint {
		return c, nil
	}
	c, err := redfish.New(redfish.Config{Endpoint: b.endpoint, Username: b.user, Password: b.pass, Auth: cfg.auth, TLS: b.tls})
	if err != nil {
		return nil, err
	}
	if old := st.client.Swap(c); old != nil {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
			defer cancel()
			_ = old.Close(ctx)
		}()
	}
	st.fingerprint = b.fingerprint
	st.systems = map[redfish.Selector]string{}
	return c, nil
}
