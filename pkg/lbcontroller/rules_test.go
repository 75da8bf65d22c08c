package lbcontroller

import "testing"

func TestKey(t *testing.T) {
	if got := Key(lb("web")); got != "ns/web" {
		t.Errorf("Key = %q, want ns/web", got)
	}
}
