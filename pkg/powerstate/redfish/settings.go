package redfish

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/redfish"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate/internal/bmcfile"
)

// Defaults of the source's settings.
const (
	DefaultTimeout     = 5 * time.Second
	DefaultCacheAge    = 10 * time.Second
	DefaultMaxInFlight = 16
	DefaultAuth        = redfish.AuthSession
)

// ErrBadSettings marks settings the source cannot use.
var ErrBadSettings = errors.New("bad redfish settings")

// Settings are the source's own (nodes.powerState.settings), for every BMC.
type Settings struct {
	// Timeout bounds one question to a BMC (login when needed, the
	// systems, the system). Default: 5s.
	Timeout string `json:"timeout,omitempty"`
	// CacheAge is how long an answer is reused. Default: 10s.
	CacheAge string `json:"cacheAge,omitempty"`
	// MaxInFlight bounds the BMCs asked at once, all machines together.
	// Default: 16.
	MaxInFlight int `json:"maxInFlight,omitempty"`
	// Auth is "session" (log in once, reuse the session's token until the
	// BMC refuses it) or "basic" (the credentials with every request).
	// Default: session.
	Auth string `json:"auth,omitempty"`
}

// settings are Settings parsed.
type settings struct {
	timeout, cacheAge time.Duration
	maxInFlight       int
	auth              redfish.Auth
}

// Machine are a machine's settings (nodes.inventory[].powerState).
type Machine struct {
	// Endpoint is the BMC's https URL ("https://198.18.30.11",
	// "https://[2001:db8::11]:8443").
	Endpoint string `json:"endpoint"`
	// UsernameFile and PasswordFile are files (mounted from a Secret) that
	// hold the BMC user's name and password; a trailing newline is dropped.
	UsernameFile string `json:"usernameFile"`
	PasswordFile string `json:"passwordFile"`
	// SystemID or SystemUUID select the machine's system among the BMC's;
	// with neither, the BMC must have only one.
	SystemID   string `json:"systemId,omitempty"`
	SystemUUID string `json:"systemUUID,omitempty"`
	// CAFile is a PEM file of the CAs that sign the BMC's certificate;
	// without it, the system's roots.
	CAFile string `json:"caFile,omitempty"`
	// InsecureSkipVerify accepts any certificate from the BMC. Only for a
	// BMC whose certificate cannot be verified (self-signed, no CA); an
	// impostor on the BMCs' network then gets the credentials and can say
	// Off.
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// bmc is a machine's settings, parsed and with its files read.
type bmc struct {
	endpoint   *url.URL
	user, pass string
	system     redfish.Selector
	tls        *tls.Config
	// fingerprint changes when anything the client is built from changes
	// (a rotated password, a new CA): the client is then made again.
	fingerprint string
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
	out := settings{timeout: DefaultTimeout, cacheAge: DefaultCacheAge, maxInFlight: DefaultMaxInFlight, auth: DefaultAuth}
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
	if in.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("maxInFlight: %d is negative", in.MaxInFlight))
	} else if in.MaxInFlight > 0 {
		out.maxInFlight = in.MaxInFlight
	}
	switch a := redfish.Auth(in.Auth); a {
	case "":
	case redfish.AuthSession, redfish.AuthBasic:
		out.auth = a
	default:
		errs = append(errs, fmt.Errorf("auth: %q is neither %q nor %q", in.Auth, redfish.AuthSession, redfish.AuthBasic))
	}
	if err := errors.Join(errs...); err != nil {
		return settings{}, fmt.Errorf("%w: %w", ErrBadSettings, err)
	}
	return out, nil
}

// parseMachine reads a machine's settings and its files.
func parseMachine(raw json.RawMessage) (bmc, error) {
	var in Machine
	if err := decodeStrict(raw, &in); err != nil {
		return bmc{}, fmt.Errorf("%w: %w", ErrBadSettings, err)
	}
	var out bmc
	var errs []error
	u, err := parseEndpoint(in.Endpoint)
	if err != nil {
		errs = append(errs, fmt.Errorf("endpoint: %w", err))
	}
	out.endpoint = u
	if in.SystemID != "" && in.SystemUUID != "" {
		errs = append(errs, errors.New("systemUUID: set only one of systemId and systemUUID"))
	}
	out.system = redfish.Selector{ID: in.SystemID, UUID: in.SystemUUID}
	if out.user, out.pass, err = bmcfile.Credentials(in.UsernameFile, in.PasswordFile); err != nil {
		errs = append(errs, err)
	}
	var caPEM []byte
	switch {
	case in.CAFile != "" && in.InsecureSkipVerify:
		errs = append(errs, errors.New("insecureSkipVerify: set with caFile, which it would ignore"))
	case in.CAFile != "":
		pool, pem, err := bmcfile.CertPool(in.CAFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("caFile: %w", err))
		}
		caPEM = pem
		out.tls = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	case in.InsecureSkipVerify:
		out.tls = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // asked for explicitly, per machine (documented risk)
	default:
		out.tls = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if err := errors.Join(errs...); err != nil {
		return bmc{}, fmt.Errorf("%w: %w", ErrBadSettings, err)
	}
	h := sha256.New()
	for _, part := range []string{out.endpoint.String(), out.user, out.pass, string(caPEM), fmt.Sprint(in.InsecureSkipVerify)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	out.fingerprint = hex.EncodeToString(h.Sum(nil))
	return out, nil
}

// parseEndpoint reads a BMC's https URL: no path, no credentials, and an IP
// address without a zone or a DNS name as its host.
func parseEndpoint(s string) (*url.URL, error) {
	if s == "" {
		return nil, errors.New("required")
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q is not an https URL without a path (https://198.18.30.11)", s)
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil && a.Zone() != "" {
		return nil, fmt.Errorf("%q: an address with a zone is not supported", s)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}
