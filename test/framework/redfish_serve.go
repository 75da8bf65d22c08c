package framework

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

const redfishSessions = "/redfish/v1/SessionService/Sessions"

// ServeHTTP answers as the BMC, after its faults.
func (b *RedfishBMC) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.requests++
	f := b.faults
	b.mu.Unlock()
	if f.Hang {
		select {
		case <-r.Context().Done():
		case <-b.stop:
		}
		return
	}
	if f.Delay > 0 {
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
			return
		case <-b.stop:
			return
		}
	}
	uri := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodGet && uri == "/redfish/v1":
		// The service root needs no credentials (the specification's
		// rule): clients find the Sessions there.
		b.writeResource(w, uri, f.Malformed)
	case r.Method == http.MethodPost && uri == redfishSessions:
		b.login(w, r, f)
	case !b.authorized(r, f):
		redfishError(w, http.StatusUnauthorized, "Base.1.0.NoValidSession", "no valid session or credentials")
	case r.Method == http.MethodGet && uri == redfishSessions:
		b.writeSessions(w, f.Malformed)
	case r.Method == http.MethodGet:
		b.writeResource(w, uri, f.Malformed)
	case r.Method == http.MethodDelete && strings.HasPrefix(uri, redfishSessions+"/"):
		b.logout(w, uri)
	case r.Method == http.MethodPatch:
		b.patch(w, r, uri)
	case r.Method == http.MethodPost:
		b.reset(w, r, uri)
	default:
		redfishError(w, http.StatusMethodNotAllowed, "Base.1.0.OperationNotAllowed", r.Method+" "+uri)
	}
}

// authorized: a live session's token, or basic auth with the BMC's user.
func (b *RedfishBMC) authorized(r *http.Request, f RedfishFaults) bool {
	if f.Refuse {
		return false
	}
	if token := r.Header.Get("X-Auth-Token"); token != "" {
		b.mu.Lock()
		defer b.mu.Unlock()
		_, ok := b.sessions[token]
		return ok
	}
	u, p, ok := r.BasicAuth()
	return ok && u == b.User && p == b.Password
}

func (b *RedfishBMC) login(w http.ResponseWriter, r *http.Request, f RedfishFaults) {
	var in struct{ UserName, Password string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		redfishError(w, http.StatusBadRequest, "Base.1.0.MalformedJSON", err.Error())
		return
	}
	if f.Refuse || in.UserName != b.User || in.Password != b.Password {
		redfishError(w, http.StatusUnauthorized, "Base.1.0.NoValidSession", "wrong user name or password")
		return
	}
	id, token := randomHex(8), randomHex(16)
	uri := redfishSessions + "/" + id
	s := maps.Clone(b.session)
	s["Id"], s["UserName"], s["@odata.id"] = id, in.UserName, uri
	b.mu.Lock()
	b.sessions[token] = uri
	b.resources[uri] = s
	b.logins++
	b.mu.Unlock()
	w.Header().Set("X-Auth-Token", token)
	w.Header().Set("Location", uri)
	writeJSON(w, http.StatusCreated, s)
}

func (b *RedfishBMC) logout(w http.ResponseWriter, uri string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for token, u := range b.sessions {
		if u == uri {
			delete(b.sessions, token)
			delete(b.resources, uri)
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	redfishError(w, http.StatusNotFound, "Base.1.0.ResourceMissingAtURI", uri)
}

func (b *RedfishBMC) writeSessions(w http.ResponseWriter, malformed bool) {
	b.mu.Lock()
	uris := slices.Sorted(maps.Values(b.sessions))
	col := maps.Clone(b.resources[redfishSessions])
	b.mu.Unlock()
	members := make([]any, 0, len(uris))
	for _, u := range uris {
		members = append(members, map[string]any{"@odata.id": u})
	}
	col["Members"], col["Members@odata.count"] = members, len(members)
	writeMaybeMalformed(w, col, malformed)
}

func (b *RedfishBMC) writeResource(w http.ResponseWriter, uri string, malformed bool) {
	b.mu.Lock()
	r, ok := b.resources[uri]
	if ok {
		r = maps.Clone(r)
	}
	b.mu.Unlock()
	if !ok {
		redfishError(w, http.StatusNotFound, "Base.1.0.ResourceMissingAtURI", uri)
		return
	}
	writeMaybeMalformed(w, r, malformed)
}

// patch changes a system's writable properties in memory.
func (b *RedfishBMC) patch(w http.ResponseWriter, r *http.Request, uri string) {
	var in map[string]any
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		redfishError(w, http.StatusBadRequest, "Base.1.0.MalformedJSON", err.Error())
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	res, ok := b.resources[uri]
	if !ok || !slices.Contains(slices.Collect(maps.Values(b.resetURIs)), uri) {
		redfishError(w, http.StatusMethodNotAllowed, "Base.1.0.OperationNotAllowed", "PATCH "+uri)
		return
	}
	for k := range in {
		if k == "Id" || k == "UUID" || k == "PowerState" || strings.HasPrefix(k, "@odata.") {
			redfishError(w, http.StatusBadRequest, "Base.1.0.PropertyNotWritable", k)
			return
		}
	}
	maps.Copy(res, in)
	writeJSON(w, http.StatusOK, res)
}

// reset runs ComputerSystem.Reset: the system's power changes, and the
// machine callback follows it.
func (b *RedfishBMC) reset(w http.ResponseWriter, r *http.Request, uri string) {
	var in struct{ ResetType string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		redfishError(w, http.StatusBadRequest, "Base.1.0.MalformedJSON", err.Error())
		return
	}
	b.mu.Lock()
	sysURI, ok := b.resetURIs[uri]
	if !ok {
		b.mu.Unlock()
		redfishError(w, http.StatusNotFound, "Base.1.0.ResourceMissingAtURI", uri)
		return
	}
	sys := b.resources[sysURI]
	wasOn := sys["PowerState"] == "On"
	var steps []bool // the power's changes, in order
	switch in.ResetType {
	case "On", "ForceOn":
		steps = []bool{true}
	case "ForceOff", "GracefulShutdown":
		steps = []bool{false}
	case "PushPowerButton":
		steps = []bool{!wasOn}
	case "ForceRestart", "GracefulRestart", "PowerCycle":
		steps = []bool{false, true}
	case "Nmi":
	default:
		b.mu.Unlock()
		redfishError(w, http.StatusBadRequest, "Base.1.0.ActionParameterValueNotInList", "ResetType "+in.ResetType)
		return
	}
	if len(steps) > 0 {
		sys["PowerState"] = map[bool]string{true: "On", false: "Off"}[steps[len(steps)-1]]
	}
	id, _ := sys["Id"].(string)
	b.mu.Unlock()
	if b.machine != nil {
		for _, on := range steps {
			b.machine(id, on)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func writeMaybeMalformed(w http.ResponseWriter, v any, malformed bool) {
	if !malformed {
		writeJSON(w, http.StatusOK, v)
		return
	}
	data, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data[:len(data)/2])
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("OData-Version", "4.0")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// redfishError writes a Redfish error answer.
func redfishError(w http.ResponseWriter, code int, id, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"code": id, "message": msg,
		"@Message.ExtendedInfo": []any{map[string]any{"MessageId": id, "Message": msg}}}})
}
