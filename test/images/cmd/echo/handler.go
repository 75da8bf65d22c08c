package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
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

// newHandler answers /healthz with 200 "ok", and any other path with the
// JSON reply.
func newHandler(id identity) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(reply{identity: id, Client: r.RemoteAddr})
	})
	return mux
}
