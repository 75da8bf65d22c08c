package redfish

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
)

func TestSettingsErrors(t *testing.T) {
	for _, tc := range []struct{ settings, want string }{
		{`{"timeout": "soon"}`, `timeout: "soon" is not a positive duration`},
		{`{"timeout": "0s"}`, `timeout: "0s" is not a positive duration`},
		{`{"cacheAge": "-1s"}`, `cacheAge: "-1s" is not a positive duration`},
		{`{"maxInFlight": -1}`, `maxInFlight: -1 is negative`},
		{`{"auth": "digest"}`, `auth: "digest" is neither "session" nor "basic"`},
		{`{"user": "admin"}`, `unknown field "user"`},
	} {
		t.Run(tc.settings, func(t *testing.T) {
			_, err := powerstate.New(Name, json.RawMessage(tc.settings), powerstate.Env{})
			if !errors.Is(err, ErrBadSettings) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New(%s) = %v; want %q", tc.settings, err, tc.want)
			}
		})
	}
	s := newSource(t, "")
	pw := writeFile(t, "x")
	notPEM := writeFile(t, "not a certificate")
	missing := filepath.Join(t.TempDir(), "missing")
	files := fmt.Sprintf(`"usernameFile": %q, "passwordFile": %q`, pw, pw)
	for _, tc := range []struct{ machine, want string }{
		{`{}`, "endpoint: required"},
		{`{"endpoint": "http://198.18.30.11", ` + files + `}`, `endpoint: "http://198.18.30.11" is not an https URL`},
		{`{"endpoint": "https://198.18.30.11/redfish/v1", ` + files + `}`, `is not an https URL without a path`},
		{`{"endpoint": "https://user:pw@198.18.30.11", ` + files + `}`, `is not an https URL`},
		{`{"endpoint": "https://[2001:db8::11%25eth0]", ` + files + `}`, `an address with a zone is not supported`},
		{`{"endpoint": "https://198.18.30.11"}`, "usernameFile: required"},
		{fmt.Sprintf(`{"endpoint": "https://198.18.30.11", "usernameFile": %q, "passwordFile": %q}`, pw, missing), "passwordFile: stat"},
		{`{"endpoint": "https://198.18.30.11", "systemId": "1", "systemUUID": "u", ` + files + `}`, "systemUUID: set only one of systemId and systemUUID"},
		{fmt.Sprintf(`{"endpoint": "https://198.18.30.11", "caFile": %q, `+files+`}`, notPEM), "caFile: "},
		{fmt.Sprintf(`{"endpoint": "https://198.18.30.11", "caFile": %q, `+files+`}`, missing), "caFile: stat"},
		{fmt.Sprintf(`{"endpoint": "https://198.18.30.11", "caFile": %q, "insecureSkipVerify": true, `+files+`}`, pw), "insecureSkipVerify: set with caFile"},
		{`{"endpoint": "https://198.18.30.11", "address": "198.18.30.11", ` + files + `}`, `unknown field "address"`},
	} {
		t.Run(tc.machine, func(t *testing.T) {
			off, err := s.Shutdown(t.Context(), powerstate.Machine{Settings: json.RawMessage(tc.machine)})
			if off || !errors.Is(err, ErrBadSettings) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Shutdown = %v, %v; want not off and %q", off, err, tc.want)
			}
		})
	}
}
