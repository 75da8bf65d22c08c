package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	id := identity{Pod: "echo-0", Node: "node-1", PodIP: "198.18.10.5"}
	h := newHandler(id)
	want := reply{identity: id, Client: "198.18.0.7:40000"}
	for _, tc := range []struct {
		name, path, contentType string
		wantHealthz             bool
	}{
		{name: "root", path: "/", contentType: "application/json"},
		{name: "any path", path: "/some/where?x=1", contentType: "application/json"},
		{name: "healthz", path: "/healthz", contentType: "text/plain; charset=utf-8", wantHealthz: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			req.RemoteAddr = want.Client
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			res := rec.Result()
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200", res.StatusCode)
			}
			if got := res.Header.Get("Content-Type"); got != tc.contentType {
				t.Errorf("Content-Type %q, want %q", got, tc.contentType)
			}
			body, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantHealthz {
				if string(body) != "ok\n" {
					t.Errorf("body %q, want %q", body, "ok\n")
				}
				return
			}
			var got reply
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("body %q: %v", body, err)
			}
			if got != want {
				t.Errorf("reply %+v, want %+v", got, want)
			}
		})
	}
}

// TestReplyJSON pins the field names tests decode.
func TestReplyJSON(t *testing.T) {
	b, err := json.Marshal(reply{identity: identity{Pod: "p", Node: "n", PodIP: "2001:db8::5"}, Client: "[2001:db8::9]:1"})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"pod":"p","node":"n","podIP":"2001:db8::5","client":"[2001:db8::9]:1"}`
	if string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
}

func TestIdentityFromEnv(t *testing.T) {
	t.Setenv("POD_NAME", "echo-abc")
	t.Setenv("NODE_NAME", "node-2")
	t.Setenv("POD_IP", "2001:db8::5")
	want := identity{Pod: "echo-abc", Node: "node-2", PodIP: "2001:db8::5"}
	if got := identityFromEnv(); got != want {
		t.Errorf("identityFromEnv() = %+v, want %+v", got, want)
	}
}

// TestFetch: /fetch answers what the URL answers, and 502 when it cannot be
// fetched.
func TestFetch(t *testing.T) {
	upstream := httptest.NewServer(newHandler(identity{Pod: "other"}))
	defer upstream.Close()
	h := newHandler(identity{Pod: "self"})
	for _, tc := range []struct {
		name, url  string
		wantStatus int
		wantPod    string
	}{
		{name: "answer", url: upstream.URL + "/", wantStatus: http.StatusOK, wantPod: "other"},
		{name: "unreachable", url: "http://127.0.0.1:1/", wantStatus: http.StatusBadGateway},
		{name: "no url", url: "", wantStatus: http.StatusBadGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/fetch?url="+url.QueryEscape(tc.url), nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d; body %q", rec.Code, tc.wantStatus, rec.Body.String())
			}
			if tc.wantPod == "" {
				return
			}
			var got reply
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("body %q: %v", rec.Body.String(), err)
			}
			if got.Pod != tc.wantPod {
				t.Errorf("answered by %q, want %q", got.Pod, tc.wantPod)
			}
		})
	}
}

// TestSlow: /slow?seconds=N answers ten lines a second for N seconds, then
// "done"; a count out of range is refused.
func TestSlow(t *testing.T) {
	h := newHandler(identity{})
	for _, tc := range []struct {
		query  string
		status int
		lines  int
	}{
		{"seconds=1", http.StatusOK, 11},
		{"seconds=0", http.StatusBadRequest, 0},
		{"seconds=121", http.StatusBadRequest, 0},
		{"seconds=x", http.StatusBadRequest, 0},
	} {
		t.Run(tc.query, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/slow?"+tc.query, nil))
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if tc.status != http.StatusOK {
				return
			}
			lines := strings.Split(strings.TrimSuffix(rec.Body.String(), "\n"), "\n")
			if len(lines) != tc.lines || lines[len(lines)-1] != "done" {
				t.Errorf("%d lines ending %q, want %d ending \"done\"", len(lines), lines[len(lines)-1], tc.lines)
			}
		})
	}
}
