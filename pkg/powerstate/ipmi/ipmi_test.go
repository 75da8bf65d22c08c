package ipmi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// machine is a machine's settings for b, with password as its password
// file's content.
func machine(t *testing.T, b *framework.BMC, password string) powerstate.Machine {
	t.Helper()
	pw := b.PasswordFile
	if password != b.Password {
		pw = filepath.Join(t.TempDir(), "password")
		if err := os.WriteFile(pw, []byte(password), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := json.Marshal(Machine{Address: b.Addr.String(), UsernameFile: b.UserFile, PasswordFile: pw})
	if err != nil {
		t.Fatal(err)
	}
	return powerstate.Machine{Node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, ID: "a", Settings: raw}
}

func newSource(t *testing.T, settings string) powerstate.Source {
	t.Helper()
	s, err := powerstate.New(Name, json.RawMessage(settings), powerstate.Env{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestShutdownFromARealBMC asks a real BMC (ipmi_sim) whose machine an
// independent client (ipmitool) powers off and on: Off is a shutdown, On is
// not.
func TestShutdownFromARealBMC(t *testing.T) {
	b := framework.StartBMC(t, "node-a", "exec sleep 100000")
	s := newSource(t, `{"cacheAge": "1ms"}`)
	m := machine(t, b, b.Password)
	ctx := t.Context()
	ask := func(want bool) {
		t.Helper()
		time.Sleep(2 * time.Millisecond) // past the cache age
		off, err := s.Shutdown(ctx, m)
		if err != nil || off != want {
			t.Fatalf("Shutdown = %v, %v; want %v", off, err, want)
		}
	}
	ask(false)
	b.Power(t, false)
	ask(true)
	b.Power(t, true)
	ask(false)
}

// TestNoEvidenceIsNotOff: a wrong password and a BMC that does not answer
// are errors, never a shutdown.
func TestNoEvidenceIsNotOff(t *testing.T) {
	b := framework.StartBMC(t, "node-b", "exec sleep 100000")
	s := newSource(t, `{"timeout": "1s", "cacheAge": "1ms"}`)
	b.Power(t, false) // what the source would see if it were let in
	off, err := s.Shutdown(t.Context(), machine(t, b, "wrong"))
	if err == nil || off {
		t.Errorf("with a wrong password: Shutdown = %v, %v; want an error and not off", off, err)
	}
	// A BMC that takes the packets and never answers.
	sink, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sink.Close() }()
	silent := machine(t, b, b.Password)
	silent.Settings = json.RawMessage(strings.Replace(string(silent.Settings), b.Addr.String(), sink.LocalAddr().String(), 1))
	off, err = s.Shutdown(t.Context(), silent)
	if !errors.Is(err, ErrNoAnswer) || off {
		t.Errorf("with a BMC that does not answer: Shutdown = %v, %v; want ErrNoAnswer and not off", off, err)
	}
	// Nobody at the address: the kernel refuses the packets.
	refused := machine(t, b, b.Password)
	refused.Settings = json.RawMessage(strings.Replace(string(refused.Settings), b.Addr.String(), "127.0.0.1:9", 1))
	if off, err := s.Shutdown(t.Context(), refused); err == nil || off {
		t.Errorf("with nobody at the address: Shutdown = %v, %v; want an error and not off", off, err)
	}
}

// TestAnswersAreCached: within cacheAge the BMC is not asked again.
func TestAnswersAreCached(t *testing.T) {
	b := framework.StartBMC(t, "node-c", "exec sleep 100000")
	s := newSource(t, `{"cacheAge": "1h"}`)
	m := machine(t, b, b.Password)
	if off, err := s.Shutdown(t.Context(), m); err != nil || off {
		t.Fatalf("Shutdown = %v, %v; want on", off, err)
	}
	b.Power(t, false)
	if off, err := s.Shutdown(t.Context(), m); err != nil || off {
		t.Errorf("within the cache age: Shutdown = %v, %v; want the cached on", off, err)
	}
}

func TestSettingsErrors(t *testing.T) {
	for _, tc := range []struct{ settings, want string }{
		{`{"timeout": "soon"}`, `timeout: "soon" is not a positive duration`},
		{`{"timeout": "0s"}`, `timeout: "0s" is not a positive duration`},
		{`{"cacheAge": "-1s"}`, `cacheAge: "-1s" is not a positive duration`},
		{`{"cipherSuite": 0}`, `cipherSuite: 0 is not a cipher suite from 1 to 17`},
		{`{"maxInFlight": -1}`, `maxInFlight: -1 is negative`},
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
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ machine, want string }{
		{`{}`, "address: required"},
		{fmt.Sprintf(`{"address": "bmc.example", "usernameFile": %q, "passwordFile": %q}`, pw, pw), `address: "bmc.example" is not an IP address`},
		{fmt.Sprintf(`{"address": "198.18.30.11:0", "usernameFile": %q, "passwordFile": %q}`, pw, pw), `is not an IP address with an optional port`},
		{`{"address": "198.18.30.11"}`, "usernameFile: required"},
		{fmt.Sprintf(`{"address": "198.18.30.11", "usernameFile": %q, "passwordFile": %q}`, pw, filepath.Join(dir, "missing")), "passwordFile: stat"},
		{fmt.Sprintf(`{"address": "198.18.30.11", "usernameFile": %q, "passwordFile": %q, "cipherSuite": 99}`, pw, pw), "cipherSuite: 99"},
	} {
		t.Run(tc.machine, func(t *testing.T) {
			off, err := s.Shutdown(t.Context(), powerstate.Machine{Settings: json.RawMessage(tc.machine)})
			if off || !errors.Is(err, ErrBadSettings) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Shutdown = %v, %v; want not off and %q", off, err, tc.want)
			}
		})
	}
}

// TestPowerOffThroughARealBMC: PowerOff powers the machine of a real BMC
// off, as an independent client (ipmitool) sees, and the source's next
// answer is Off though an On was held; a wrong password is an error.
func TestPowerOffThroughARealBMC(t *testing.T) {
	b := framework.StartBMC(t, "node-d", "exec sleep 100000")
	s := newSource(t, `{"cacheAge": "1h"}`)
	m := machine(t, b, b.Password)
	if off, err := s.Shutdown(t.Context(), m); err != nil || off {
		t.Fatalf("Shutdown = %v, %v; want on", off, err)
	}
	f, ok := s.(powerstate.Fencer)
	if !ok {
		t.Fatal("the ipmi source is no Fencer")
	}
	if err := f.PowerOff(t.Context(), machine(t, b, "wrong")); err == nil {
		t.Error("PowerOff with a wrong password: no error")
	}
	if err := f.PowerOff(t.Context(), m); err != nil {
		t.Fatalf("PowerOff: %v", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, err := b.IPMITool("chassis", "power", "status")
		if err == nil && strings.Contains(out, "is off") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ipmitool does not see the power off within 15s: %v %s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if off, err := s.Shutdown(t.Context(), m); err != nil || !off {
		t.Errorf("after PowerOff: Shutdown = %v, %v; want off", off, err)
	}
}
