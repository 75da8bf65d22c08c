package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

// identity is who answers: the pod, from the Downward API.
type identity struct {
	Pod   string `json:"pod"`
	Node  string `json:"node"`
	PodIP string `json:"podIP"`
}

// identityFromEnv reads the variables a pod sets with fieldRef
// metadata.name, spec.nodeName and status.podIP.
func identityFromEnv() identity {
	return identity{Pod: os.Getenv("POD_NAME"), Node: os.Getenv("NODE_NAME"), PodIP: os.Getenv("POD_IP")}
}

// reply is the body of every answer but /healthz's.
type reply struct {
	identity
	// Client is the request's source address and port as the pod sees
	// it: whether a Service preserved the client's address shows here.
	Client string `json:"client"`
}

// maxSlow bounds a /slow answer.
const maxSlow = 2 * time.Minute

// slow answers /slow?seconds=N (at most maxSlow) with a line every 100 ms
// for N seconds, each flushed: a long download, whose connection a test
// watches through a failover. The last line is "done".
func slow(w http.ResponseWriter, r *http.Request) {
	seconds, err := strconv.Atoi(r.URL.Query().Get("seconds"))
	if err != nil || seconds <= 0 || time.Duration(seconds)*time.Second > maxSlow {
		http.Error(w, "seconds: want a whole number from 1 to 120", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	flusher, _ := w.(http.Flusher)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := range seconds * 10 {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
		_, _ = fmt.Fprintf(w, "%d\n", i)
		if flusher != nil {
			flusher.Flush()
		}
	}
	_, _ = io.WriteString(w, "done\n")
}

// fetchTimeout bounds a /fetch request.
const fetchTimeout = 5 * time.Second

// newHandler answers /healthz with 200 "ok", /fetch?url=URL with what a GET
// of URL from this pod answers (its status and body; 502 and the error if
// it fails: how a test sends a request from one pod to another), and any
// other path with the JSON reply.
func newHandler(id identity) http.Handler {
	mux := http.NewServeMux()
	client := &http.Client{Timeout: fetchTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	mux.HandleFunc("/fetch", func(w http.ResponseWriter, r *http.Request) {
		resp, err := client.Get(r.URL.Query().Get("url")) //nolint:noctx,gosec // a test workload: it fetches what the test asks, bounded by the timeout
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/slow", slow)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(reply{identity: id, Client: r.RemoteAddr})
	})
	return mux
}
