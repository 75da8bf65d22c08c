package netlab

import (
	"os"
	"testing"
	"time"
)

func TestZZDebug(t *testing.T) {
	if os.Getenv("NETLAB_DEBUG") == "" {
		t.Skip()
	}
	l := New(t, Options{Nodes: 2, Speakers: 2})
	_ = l.ServeHTTP(1, ":8080")
	t.Logf("router %s client %s nodes %v", l.Router, l.Client, l.Nodes)
	os.WriteFile("/tmp/netlab-debug", []byte(l.Router+" "+l.Client+" "+l.Nodes[0]+" "+l.Nodes[1]), 0o600)
	for i := 0; i < 600; i++ {
		if _, err := os.Stat("/tmp/netlab-debug"); err != nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}
