package framework

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// redfishMockup is the DMTF public mockup public-rackmount1, the resources
// the test BMC serves (testdata/redfish-mockup/README.md).
//
//go:embed testdata/redfish-mockup
var redfishMockup embed.FS

// mockupSystem is the mockup's one system, copied for a BMC of several.
const mockupSystem = "/redfish/v1/Systems/437XR1138R2"

// RedfishBMC is a Redfish service over TLS (a test CA's certificate) that
// serves the DMTF's public mockup: the service root, its systems, sessions
// (POST to SessionService/Sessions gives an X-Auth-Token and a Location,
// DELETE ends it) or basic auth. A system's PATCH and its
// ComputerSystem.Reset action change it in memory, and a Reset drives the
// machine's power callback. Faults (SetFaults) make it refuse, answer
// late, answer malformed JSON or not at all.
type RedfishBMC struct {
	// Endpoint is the BMC's base URL, https://127.0.0.1:PORT.
	Endpoint string
	// CAFile is the PEM certificate of the CA that signed the BMC's.
	CAFile         string
	User, Password string
	// UserFile and PasswordFile hold User and Password.
	UserFile, PasswordFile string
	// Systems are the BMC's systems, in the order of its collection.
	Systems []RedfishSystem

	server  *httptest.Server
	extra   []*http.Server // ServeOn's, closed with the BMC
	stop    chan struct{}  // closed at the end: hanging answers end
	machine func(systemID string, on bool)

	mu        sync.Mutex
	resources map[string]map[string]any // by URI, without a trailing slash
	resetURIs map[string]string         // a Reset action's target → its system's URI
	session   map[string]any            // the template of a new session
	sessions  map[string]string         // token → session URI
	faults    RedfishFaults
	logins    int
	requests  int
}

// RedfishSystem is a system of a RedfishBMC.
type RedfishSystem struct {
	ID, UUID string
}

// RedfishOptions shape a RedfishBMC.
type RedfishOptions struct {
	// Systems is the number of systems (default 1): the mockup's, then
	// copies of it with other Ids and UUIDs.
	Systems int
	// Machine, when set, is called when a Reset changes a system's power,
	// after the change: it is the machine that the BMC powers.
	Machine func(systemID string, on bool)
}

// RedfishFaults are what the BMC does wrong.
type RedfishFaults struct {
	// Refuse answers 401 to every login and authenticated request, as
	// after a change of the password.
	Refuse bool
	// Delay makes every answer this late.
	Delay time.Duration
	// Malformed answers GETs with JSON cut in half.
	Malformed bool
	// Hang never answers (until the client gives up or the test ends).
	Hang bool
}

// StartRedfishBMC starts a Redfish BMC for the test, its systems powered
// on, and stops it at the end of the test.
func StartRedfishBMC(t testing.TB, name string, o RedfishOptions) *RedfishBMC {
	t.Helper()
	b, err := NewRedfishBMC(t.TempDir(), name, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// NewRedfishBMC starts a Redfish BMC, its systems powered on, with its CA
// certificate and credentials written to files in dir; Close stops it. It
// is StartRedfishBMC for a harness that is not a test (the benchmarks).
func NewRedfishBMC(dir, name string, o RedfishOptions) (*RedfishBMC, error) {
	ca, err := newTestCA("redfish CA " + name)
	if err != nil {
		return nil, err
	}
	cert, err := ca.serving()
	if err != nil {
		return nil, err
	}
	b := &RedfishBMC{User: "admin", Password: "redfish-" + name, CAFile: filepath.Join(dir, "ca.pem"),
		UserFile: filepath.Join(dir, "user"), PasswordFile: filepath.Join(dir, "password"),
		stop: make(chan struct{}), machine: o.Machine, sessions: map[string]string{}}
	for p, content := range map[string][]byte{b.CAFile: ca.pem, b.UserFile: []byte(b.User + "\n"), b.PasswordFile: []byte(b.Password + "\n")} {
		if err := os.WriteFile(p, content, 0o600); err != nil {
			return nil, fmt.Errorf("redfish BMC %s: %w", name, err)
		}
	}
	if err := b.load(max(o.Systems, 1)); err != nil {
		return nil, err
	}
	b.server = httptest.NewUnstartedServer(b)
	// Clients that refuse the certificate are what some tests want.
	b.server.Config.ErrorLog = log.New(io.Discard, "", 0)
	b.server.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	b.server.StartTLS()
	b.Endpoint = b.server.URL
	return b, nil
}

// Close stops the BMC, on every endpoint: hanging answers end.
func (b *RedfishBMC) Close() {
	b.mu.Lock()
	extra := b.extra
	b.extra = nil
	b.mu.Unlock()
	close(b.stop)
	b.server.Close()
	for _, srv := range extra {
		_ = srv.Close()
	}
}

// load reads the mockup's resources and makes the systems.
func (b *RedfishBMC) load(systems int) error {
	b.resources = map[string]map[string]any{}
	b.resetURIs = map[string]string{}
	err := fs.WalkDir(redfishMockup, "testdata/redfish-mockup", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Base(p) != "index.json" {
			return err
		}
		data, err := redfishMockup.ReadFile(p)
		if err != nil {
			return err
		}
		var r map[string]any
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		uri := strings.TrimSuffix(path.Join("/redfish/v1", strings.TrimPrefix(path.Dir(p), "testdata/redfish-mockup")), "/")
		b.resources[uri] = r
		return nil
	})
	if err != nil {
		return fmt.Errorf("redfish mockup: %w", err)
	}
	// The mockup's session is the template of new ones; the collection
	// lists the live sessions.
	b.session = b.resources["/redfish/v1/SessionService/Sessions/1234567890ABCDEF"]
	delete(b.resources, "/redfish/v1/SessionService/Sessions/1234567890ABCDEF")
	sys, ok := b.resources[mockupSystem]
	if !ok || b.session == nil {
		return fmt.Errorf("redfish mockup: no %s or no session", mockupSystem)
	}
	template, err := json.Marshal(sys)
	if err != nil {
		return err
	}
	var members []any
	for i := range systems {
		id, uuid := sys["Id"].(string), sys["UUID"].(string)
		if i > 0 {
			id, uuid = fmt.Sprintf("%s-%d", id, i+1), fmt.Sprintf("%s%012d", uuid[:len(uuid)-12], i+1)
		}
		uri := path.Join(path.Dir(mockupSystem), id)
		var r map[string]any
		if err := json.Unmarshal([]byte(strings.ReplaceAll(string(template), mockupSystem, uri)), &r); err != nil {
			return err
		}
		r["Id"], r["UUID"], r["PowerState"] = id, uuid, "On"
		b.resources[uri] = r
		b.resetURIs[uri+"/Actions/ComputerSystem.Reset"] = uri
		members = append(members, map[string]any{"@odata.id": uri})
		b.Systems = append(b.Systems, RedfishSystem{ID: id, UUID: uuid})
	}
	col := b.resources["/redfish/v1/Systems"]
	col["Members"], col["Members@odata.count"] = members, len(members)
	return nil
}

// SetFaults sets what the BMC does wrong from now on.
func (b *RedfishBMC) SetFaults(f RedfishFaults) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.faults = f
}

// SetPowerState sets a system's PowerState as the BMC reports it (On, Off,
// PoweringOn...; "" removes it), as if its machine changed by itself; the
// machine callback is not called.
func (b *RedfishBMC) SetPowerState(systemID, state string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.resources[path.Join(path.Dir(mockupSystem), systemID)]
	if state == "" {
		delete(r, "PowerState")
		return
	}
	r["PowerState"] = state
}

// PowerState is a system's PowerState.
func (b *RedfishBMC) PowerState(systemID string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, _ := b.resources[path.Join(path.Dir(mockupSystem), systemID)]["PowerState"].(string)
	return s
}

// Logins counts the sessions created (refused logins not counted).
func (b *RedfishBMC) Logins() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.logins
}

// Requests counts the requests the BMC got.
func (b *RedfishBMC) Requests() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests
}

// Sessions counts the live sessions.
func (b *RedfishBMC) Sessions() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sessions)
}

// DropSessions ends every session, as a BMC's restart or the sessions'
// timeout does: their next request gets a 401.
func (b *RedfishBMC) DropSessions() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, uri := range b.sessions {
		delete(b.resources, uri)
	}
	b.sessions = map[string]string{}
}

func randomHex(n int) string {
	p := make([]byte, n)
	_, _ = rand.Read(p)
	return hex.EncodeToString(p)
}

// Power switches a system on or off through the BMC's Reset action (On or
// ForceOff), as an operator would: an HTTPS request with basic auth,
// independent of the client under test.
func (b *RedfishBMC) Power(t testing.TB, systemID string, on bool) {
	t.Helper()
	reset := map[bool]string{true: "On", false: "ForceOff"}[on]
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(b.CAFile)
	if err != nil || !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("the BMC's CA %s: %v", b.CAFile, err)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer c.CloseIdleConnections()
	target := b.Endpoint + path.Join(path.Dir(mockupSystem), systemID) + "/Actions/ComputerSystem.Reset"
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, target, strings.NewReader(`{"ResetType": "`+reset+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(b.User, b.Password)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("Reset %s: %v", reset, err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("Reset %s: HTTP %d", reset, resp.StatusCode)
	}
	if got, want := b.PowerState(systemID), map[bool]string{true: "On", false: "Off"}[on]; got != want {
		t.Fatalf("after Reset %s the system is %q", reset, got)
	}
}
