package redfish

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
	"github.com/metal-ccm/metal-ccm/pkg/redfish"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// machine is a machine's settings for b (its endpoint, credentials and CA),
// changed by edit.
func machine(t *testing.T, b *framework.RedfishBMC, edit func(*Machine)) powerstate.Machine {
	t.Helper()
	in := Machine{Endpoint: b.Endpoint, UsernameFile: b.UserFile, PasswordFile: b.PasswordFile, CAFile: b.CAFile}
	if edit != nil {
		edit(&in)
	}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return powerstate.Machine{Node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, ID: "a", Settings: raw}
}

func newSource(t *testing.T, settings string) *Source {
	t.Helper()
	s, err := powerstate.New(Name, json.RawMessage(settings), powerstate.Env{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.(*Source)
}

// writeFile writes content into a new file of the test.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPowerState: Off is a shutdown, On is not, and any other PowerState
// (a transition, none) is an error, never Off.
func TestPowerState(t *testing.T) {
	b := framework.StartRedfishBMC(t, "states", framework.RedfishOptions{})
	id := b.Systems[0].ID
	for _, auth := range []string{"session", "basic"} {
		s := newSource(t, `{"cacheAge": "0s", "auth": "`+auth+`"}`)
		for _, tc := range []struct {
			state   string
			off     bool
			wantErr error
		}{
			{"On", false, nil},
			{"Off", true, nil},
			{"PoweringOn", false, ErrNotOnOrOff},
			{"PoweringOff", false, ErrNotOnOrOff},
			{"Paused", false, ErrNotOnOrOff},
			{"", false, ErrNotOnOrOff},
		} {
			t.Run(auth+"/"+tc.state, func(t *testing.T) {
				b.SetPowerState(id, tc.state)
				off, err := s.Shutdown(t.Context(), machine(t, b, nil))
				if off != tc.off || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
					t.Errorf("PowerState %q: Shutdown = %v, %v; want %v, %v", tc.state, off, err, tc.off, tc.wantErr)
				}
			})
		}
	}
}

// TestSystemSelection: a system by its Id or its UUID, or the only one; a
// BMC of several systems without a selection, or without the system
// selected, is an error.
func TestSystemSelection(t *testing.T) {
	several := framework.StartRedfishBMC(t, "several", framework.RedfishOptions{Systems: 3})
	one := framework.StartRedfishBMC(t, "one", framework.RedfishOptions{})
	several.SetPowerState(several.Systems[1].ID, "Off")
	one.SetPowerState(one.Systems[0].ID, "Off")
	s := newSource(t, `{"cacheAge": "0s"}`)
	for _, tc := range []struct {
		name    string
		b       *framework.RedfishBMC
		edit    func(*Machine)
		off     bool
		wantErr error
	}{
		{"by Id", several, func(m *Machine) { m.SystemID = several.Systems[1].ID }, true, nil},
		{"by Id, another", several, func(m *Machine) { m.SystemID = several.Systems[2].ID }, false, nil},
		{"by UUID", several, func(m *Machine) { m.SystemUUID = strings.ToLower(several.Systems[1].UUID) }, true, nil},
		{"by UUID, another", several, func(m *Machine) { m.SystemUUID = several.Systems[0].UUID }, false, nil},
		{"the only one", one, nil, true, nil},
		{"several, none selected", several, nil, false, redfish.ErrSeveralSystems},
		{"no such Id", several, func(m *Machine) { m.SystemID = "nowhere" }, false, redfish.ErrNoSystem},
		{"no such UUID", several, func(m *Machine) { m.SystemUUID = "00000000-0000-0000-0000-000000000000" }, false, redfish.ErrNoSystem},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 { // the second time through the system's URI kept
				off, err := s.Shutdown(t.Context(), machine(t, tc.b, tc.edit))
				if off != tc.off || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
					t.Fatalf("Shutdown = %v, %v; want %v, %v", off, err, tc.off, tc.wantErr)
				}
			}
		})
	}
}

// TestNoEvidenceIsNotOff: refused credentials, a certificate that does not
// verify, a malformed answer, nobody at the address: errors, never a
// shutdown, though the machine is off.
func TestNoEvidenceIsNotOff(t *testing.T) {
	b := framework.StartRedfishBMC(t, "no-evidence", framework.RedfishOptions{})
	b.SetPowerState(b.Systems[0].ID, "Off") // what the source would see if it could
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "https://" + gone.Addr().String()
	_ = gone.Close()
	wrong := writeFile(t, "wrong\n")
	unrelated := framework.UnrelatedCAFile(t)
	for _, tc := range []struct {
		name     string
		settings string
		edit     func(*Machine)
		faults   framework.RedfishFaults
		wantErr  error
	}{
		{"wrong password, session", `{}`, func(m *Machine) { m.PasswordFile = wrong }, framework.RedfishFaults{}, redfish.ErrUnauthorized},
		{"wrong password, basic", `{"auth": "basic"}`, func(m *Machine) { m.PasswordFile = wrong }, framework.RedfishFaults{}, redfish.ErrUnauthorized},
		{"BMC refuses all", `{}`, nil, framework.RedfishFaults{Refuse: true}, redfish.ErrUnauthorized},
		{"another CA", `{}`, func(m *Machine) { m.CAFile = unrelated }, framework.RedfishFaults{}, nil},
		{"the system's roots", `{}`, func(m *Machine) { m.CAFile = "" }, framework.RedfishFaults{}, nil},
		{"malformed JSON", `{}`, nil, framework.RedfishFaults{Malformed: true}, redfish.ErrMalformed},
		{"malformed JSON, basic", `{"auth": "basic"}`, nil, framework.RedfishFaults{Malformed: true}, redfish.ErrMalformed},
		{"nobody at the address", `{}`, func(m *Machine) { m.Endpoint = nobody }, framework.RedfishFaults{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.SetFaults(tc.faults)
			defer b.SetFaults(framework.RedfishFaults{})
			s := newSource(t, tc.settings)
			off, err := s.Shutdown(t.Context(), machine(t, b, tc.edit))
			if off || err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Errorf("Shutdown = %v, %v; want not off and an error (%v)", off, err, tc.wantErr)
			}
		})
	}
	// The same BMC, reached: Off.
	s := newSource(t, `{}`)
	if off, err := s.Shutdown(t.Context(), machine(t, b, nil)); err != nil || !off {
		t.Errorf("without faults: Shutdown = %v, %v; want off", off, err)
	}
}

// TestInsecureSkipVerify: asked for explicitly, a BMC whose certificate
// cannot be verified is asked.
func TestInsecureSkipVerify(t *testing.T) {
	b := framework.StartRedfishBMC(t, "insecure", framework.RedfishOptions{})
	s := newSource(t, `{}`)
	off, err := s.Shutdown(t.Context(), machine(t, b, func(m *Machine) { m.CAFile, m.InsecureSkipVerify = "", true }))
	if err != nil || off {
		t.Errorf("Shutdown = %v, %v; want on", off, err)
	}
}

// TestTimeoutIsBounded: a BMC that never answers, or answers after the
// timeout, is ErrNoAnswer, well before the BMC would have answered.
func TestTimeoutIsBounded(t *testing.T) {
	b := framework.StartRedfishBMC(t, "slow", framework.RedfishOptions{})
	b.SetPowerState(b.Systems[0].ID, "Off")
	for _, tc := range []struct {
		name   string
		faults framework.RedfishFaults
	}{
		{"hanging", framework.RedfishFaults{Hang: true}},
		{"slow", framework.RedfishFaults{Delay: time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.SetFaults(tc.faults)
			defer b.SetFaults(framework.RedfishFaults{})
			s := newSource(t, `{"timeout": "300ms"}`)
			start := time.Now()
			off, err := s.Shutdown(t.Context(), machine(t, b, nil))
			if off || !errors.Is(err, ErrNoAnswer) {
				t.Errorf("Shutdown = %v, %v; want not off and ErrNoAnswer", off, err)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("Shutdown took %s with a timeout of 300ms", d)
			}
		})
	}
}

// TestAnswersAreCached: within cacheAge the BMC is not asked again.
func TestAnswersAreCached(t *testing.T) {
	b := framework.StartRedfishBMC(t, "cache", framework.RedfishOptions{})
	s := newSource(t, `{"cacheAge": "1h"}`)
	m := machine(t, b, nil)
	if off, err := s.Shutdown(t.Context(), m); err != nil || off {
		t.Fatalf("Shutdown = %v, %v; want on", off, err)
	}
	asked := b.Requests()
	b.SetPowerState(b.Systems[0].ID, "Off")
	if off, err := s.Shutdown(t.Context(), m); err != nil || off {
		t.Errorf("within the cache age: Shutdown = %v, %v; want the cached on", off, err)
	}
	if got := b.Requests(); got != asked {
		t.Errorf("the BMC got %d requests for a cached answer", got-asked)
	}
}

// TestSessions: one session serves every question; a session the BMC
// dropped is made again; Close ends it. Basic auth makes none.
func TestSessions(t *testing.T) {
	b := framework.StartRedfishBMC(t, "sessions", framework.RedfishOptions{})
	s := newSource(t, `{"cacheAge": "0s"}`)
	m := machine(t, b, nil)
	ask := func() {
		t.Helper()
		if off, err := s.Shutdown(t.Context(), m); err != nil || off {
			t.Fatalf("Shutdown = %v, %v; want on", off, err)
		}
	}
	for range 3 {
		ask()
	}
	if got := b.Logins(); got != 1 {
		t.Errorf("3 questions made %d sessions, want 1", got)
	}
	b.DropSessions() // the BMC restarted: the token gets a 401
	ask()
	if got, live := b.Logins(), b.Sessions(); got != 2 || live != 1 {
		t.Errorf("after the session was dropped: %d logins, %d live sessions; want 2, 1", got, live)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if live := b.Sessions(); live != 0 {
		t.Errorf("after Close: %d live sessions, want 0", live)
	}
	if _, err := s.Shutdown(t.Context(), m); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: Shutdown error %v, want ErrClosed", err)
	}

	basic := newSource(t, `{"cacheAge": "0s", "auth": "basic"}`)
	if off, err := basic.Shutdown(t.Context(), m); err != nil || off {
		t.Fatalf("basic auth: Shutdown = %v, %v; want on", off, err)
	}
	if got := b.Logins(); got != 2 {
		t.Errorf("basic auth made a session (%d logins, want 2)", got)
	}
}

// TestPowerOff: a Reset ForceOff powers the machine off, and the source's
// next answer is Off.
func TestPowerOff(t *testing.T) {
	var mu sync.Mutex
	var changes []string
	b := framework.StartRedfishBMC(t, "fence", framework.RedfishOptions{Systems: 2, Machine: func(id string, on bool) {
		mu.Lock()
		defer mu.Unlock()
		changes = append(changes, map[bool]string{true: id + " on", false: id + " off"}[on])
	}})
	var s powerstate.Source = newSource(t, `{"cacheAge": "1h"}`)
	f, ok := s.(powerstate.Fencer)
	if !ok {
		t.Fatal("the redfish source is no Fencer")
	}
	m := machine(t, b, func(m *Machine) { m.SystemID = b.Systems[1].ID })
	if off, err := s.Shutdown(t.Context(), m); err != nil || off {
		t.Fatalf("Shutdown = %v, %v; want on", off, err)
	}
	if err := f.PowerOff(t.Context(), m); err != nil {
		t.Fatalf("PowerOff: %v", err)
	}
	if off, err := s.Shutdown(t.Context(), m); err != nil || !off {
		t.Errorf("after PowerOff: Shutdown = %v, %v; want off (not the cached on)", off, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{b.Systems[1].ID + " off"}; strings.Join(changes, ",") != strings.Join(want, ",") {
		t.Errorf("the machines' power changed %v, want %v", changes, want)
	}
	if got := b.PowerState(b.Systems[0].ID); got != "On" {
		t.Errorf("the other system is %s, want On", got)
	}
	wrong := machine(t, b, func(m *Machine) { m.SystemID = b.Systems[0].ID; m.PasswordFile = writeFile(t, "wrong") })
	if err := f.PowerOff(t.Context(), wrong); !errors.Is(err, redfish.ErrUnauthorized) {
		t.Errorf("PowerOff with a wrong password: %v, want ErrUnauthorized", err)
	}
}
