package ipmi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate/internal/bmcfile"
)

// Defaults of the source's settings.
const (
	DefaultPort        = 623
	DefaultTimeout     = 5 * time.Second
	DefaultCacheAge    = 10 * time.Second
	DefaultCipherSuite = 3 // RMCP+ with HMAC-SHA1 and AES-CBC-128: what BMCs offer most; naming it skips a discovery round
	DefaultMaxInFlight = 16
)

// ErrBadSettings marks settings the source cannot use.
var ErrBadSettings = errors.New("bad ipmi settings")

// Settings are the source's own (nodes.powerState.settings), for every BMC.
type Settings struct {
	// Timeout bounds one question to a BMC (session and status). Default: 5s.
	Timeout string `json:"timeout,omitempty"`
	// CacheAge is how long an answer is reused. Default: 10s.
	CacheAge string `json:"cacheAge,omitempty"`
	// CipherSuite is the RMCP+ cipher suite id. Default: 3.
	CipherSuite *int `json:"cipherSuite,omitempty"`
	// MaxInFlight bounds the BMCs asked at once, all machines together.
	// Default: 16.
	MaxInFlight int `json:"maxInFlight,omitempty"`
}

// settings are Settings parsed.
type settings struct {
	timeout, cacheAge time.Duration
	cipherSuite       uint8
	maxInFlight       int
}

// Machine are a machine's settings (nodes.inventory[].powerState).
type Machine struct {
	// Address is the BMC's IP address, with a port when it is not 623
	// ("198.18.30.11", "198.18.30.11:6230", "[2001:db8::11]:6230").
	Address string `json:"address"`
	// UsernameFile and PasswordFile are files (mounted from a Secret) that
	// hold the BMC user's name and password; a trailing newline is dropped.
	UsernameFile string `json:"usernameFile"`
	PasswordFile string `json:"passwordFile"`
	// CipherSuite overrides the source's for this BMC.
	CipherSuite *int `json:"cipherSuite,omitempty"`
}

// bmc is a machine's settings, parsed and with its credentials read.
type bmc struct {
	addr        netip.AddrPort
	user, pass  string
	cipherSuite uint8
}

// decodeStrict decodes a JSON object, refusing unknown fields.
func decodeStrict(raw json.RawMessage, into any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	return d.Decode(into)
}

func parseSettings(raw json.RawMessage) (settings, error) {
	var in Settings
	if err := decodeStrict(raw, &in); err != nil {
		return settings{}, fmt.Errorf("%w: %w", ErrBadSettings, err)
	}
	out := settings{timeout: DefaultTimeout, cacheAge: DefaultCacheAge, cipherSuite: DefaultCipherSuite, maxInFlight: DefaultMaxInFlight}
	var errs []error
	for _, d := range []struct {
		name, value string
		into        *time.Duration
	}{{"timeout", in.Timeout, &out.timeout}, {"cacheAge", in.CacheAge, &out.cacheAge}} {
		if d.value == "" {
			continue
		}
		v, err := time.ParseDuration(d.value)
		if err != nil || v < 0 || (d.name == "timeout" && v == 0) {
			errs = append(errs, fmt.Errorf("%s: %q is not a positive duration", d.name, d.value))
			continue
		}
		*d.into = v
	}
	if in.CipherSuite != nil {
		cs, err := cipherSuite(*in.CipherSuite)
		if err != nil {
			errs = append(errs, fmt.Errorf("cipherSuite: %w", err))
		}
		out.cipherSuite = cs
	}
	if in.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("maxInFlight: %d is negative", in.MaxInFlight))
	} else if in.MaxInFlight > 0 {
		out.maxInFlight = in.MaxInFlight
	}
	if err := errors.Join(errs...); err != nil {
		return settings{}, fmt.Errorf("%w: %w", ErrBadSettings, err)
	}
	return out, nil
}

// cipherSuite checks an RMCP+ cipher suite id: 0 (no authentication) is
// refused, as it lets anyone on the BMC's network answer for it.
func cipherSuite(id int) (uint8, error) {
	if id < 1 || id > 17 {
		return 0, fmt.Errorf("%d is not a cipher suite from 1 to 17", id)
	}
	return uint8(id), nil
}

// parseMachine reads a machine's settings and its credential files.
func parseMachine(raw json.RawMessage, def settings) (bmc, error) {
	var in Machine
	if err := decodeStrict(raw, &in); err != nil {
		return bmc{}, fmt.Errorf("%w: %w", ErrBadSettings, err)
	}
	var out bmc
	var errs []error
	addr, err := parseAddress(in.Address)
	if err != nil {
		errs = append(errs, fmt.Errorf("address: %w", err))
	}
	out.addr = addr
	out.cipherSuite = def.cipherSuite
	if in.CipherSuite != nil {
		if out.cipherSuite, err = cipherSuite(*in.CipherSuite); err != nil {
			errs = append(errs, fmt.Errorf("cipherSuite: %w", err))
		}
	}
	if out.user, out.pass, err = bmcfile.Credentials(in.UsernameFile, in.PasswordFile); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return bmc{}, fmt.Errorf("%w: %w", ErrBadSettings, err)
	}
	return out, nil
}

// parseAddress reads an IP address with an optional port.
func parseAddress(s string) (netip.AddrPort, error) {
	if s == "" {
		return netip.AddrPort{}, errors.New("required")
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.AddrPortFrom(a.Unmap(), DefaultPort), nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q is not an IP address with an optional port", s)
	}
	a, err := netip.ParseAddr(host)
	p, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || perr != nil || p == 0 || a.Zone() != "" {
		return netip.AddrPort{}, fmt.Errorf("%q is not an IP address with an optional port", s)
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(p)), nil
}
