package redfish

import (
	"errors"
	"net/url"
	"testing"
)

// TestResolve: links are followed only into the endpoint's own /redfish/
// tree, so that the credentials go nowhere else.
func TestResolve(t *testing.T) {
	c, err := New(Config{Endpoint: &url.URL{Scheme: "https", Host: "198.18.30.11"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		link, want string
		err        error
	}{
		{"/redfish/v1/Systems/1", "https://198.18.30.11/redfish/v1/Systems/1", nil},
		{"https://198.18.30.11/redfish/v1/Systems/1", "https://198.18.30.11/redfish/v1/Systems/1", nil},
		{"/redfish/v1/Systems?$expand=.", "https://198.18.30.11/redfish/v1/Systems?$expand=.", nil},
		{"https://198.18.30.12/redfish/v1/Systems/1", "", ErrBadLink},
		{"http://198.18.30.11/redfish/v1/Systems/1", "", ErrBadLink},
		{"//198.18.30.12/redfish/v1/", "", ErrBadLink},
		{"/other/v1", "", ErrBadLink},
		{"Systems/1", "", ErrBadLink},
	} {
		t.Run(tc.link, func(t *testing.T) {
			u, err := c.resolve(tc.link)
			if !errors.Is(err, tc.err) || (err == nil && u.String() != tc.want) {
				t.Errorf("resolve(%q) = %v, %v; want %q, %v", tc.link, u, err, tc.want, tc.err)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Endpoint: &url.URL{Scheme: "http", Host: "198.18.30.11"}},
		{Endpoint: &url.URL{Scheme: "https", Host: "198.18.30.11"}, Auth: "digest"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) = nil error", cfg)
		}
	}
}
