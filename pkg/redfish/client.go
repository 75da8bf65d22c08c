// Package redfish is a small client of the DMTF Redfish API: the service
// root, the systems collection, a ComputerSystem's power state, its Reset
// action, and sessions. It knows one URI, the service root /redfish/v1/,
// and finds every other resource by the @odata.id links of the schema, as
// the specification asks of clients (BMCs place their resources at
// different paths).
//
// It exists because the Redfish libraries (github.com/stmcginnis/gofish,
// github.com/bmc-toolbox/bmclib/v2) are not served by the module proxy the
// project builds with; what the power-state source needs is a few
// resources, which this package reads with typed structs.
package redfish

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// RootURI is the service root, the one URI the client does not learn from
// a link.
const RootURI = "/redfish/v1/"

// maxBody bounds what the client reads of an answer: a ComputerSystem is a
// few kilobytes, and a BMC that sends more is not believed.
const maxBody = 4 << 20

// Auth is how the client proves who it is.
type Auth string

const (
	// AuthSession logs in once (POST to the service's Sessions) and sends
	// the session's X-Auth-Token; the session is reused until the BMC
	// refuses it, then created again. BMCs answer a session's requests
	// faster than basic auth's, which many check against a slow store on
	// each request.
	AuthSession Auth = "session"
	// AuthBasic sends the user and password with every request.
	AuthBasic Auth = "basic"
)

// Config is what a Client needs.
type Config struct {
	// Endpoint is the BMC's base URL (https://198.18.30.11), without a
	// path.
	Endpoint *url.URL
	// Username and Password are the BMC user's.
	Username, Password string
	Auth               Auth
	// TLS verifies the BMC's certificate (nil: the system's roots).
	TLS *tls.Config
}

// Client talks to one BMC. Its methods may be called concurrently; the
// deadline of each call is its context's.
type Client struct {
	base       *url.URL
	user, pass string
	auth       Auth
	http       *http.Client
	transport  *http.Transport

	loginMu sync.Mutex // held while logging in, so that one session is made
	mu      sync.Mutex // guards the fields below
	root    *ServiceRoot
	token   string // the session's X-Auth-Token; "" without a session
	session string // the session's URI, for its deletion
}

// New builds a client; it does not connect.
func New(cfg Config) (*Client, error) {
	if cfg.Endpoint == nil || cfg.Endpoint.Scheme != "https" || cfg.Endpoint.Host == "" {
		return nil, fmt.Errorf("endpoint %v: not an https URL", cfg.Endpoint)
	}
	if cfg.Auth == "" {
		cfg.Auth = AuthSession
	}
	if cfg.Auth != AuthSession && cfg.Auth != AuthBasic {
		return nil, fmt.Errorf("auth %q: neither %q nor %q", cfg.Auth, AuthSession, AuthBasic)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // BMCs are on a management network, not behind the cluster's proxy
	t.TLSClientConfig = cfg.TLS
	t.MaxIdleConnsPerHost = 1 // one question at a time per BMC
	t.IdleConnTimeout = time.Minute
	return &Client{
		base: &url.URL{Scheme: cfg.Endpoint.Scheme, Host: cfg.Endpoint.Host},
		user: cfg.Username, pass: cfg.Password, auth: cfg.Auth,
		transport: t,
		http: &http.Client{Transport: t,
			// A redirect would be followed with the credentials, maybe to
			// another host: not followed, it is an error.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}, nil
}

// Endpoint is the BMC's base URL.
func (c *Client) Endpoint() string { return c.base.String() }

// ServiceRoot reads the service root, once: it does not change while the
// BMC runs, and needs no credentials.
func (c *Client) ServiceRoot(ctx context.Context) (*ServiceRoot, error) {
	c.mu.Lock()
	root := c.root
	c.mu.Unlock()
	if root != nil {
		return root, nil
	}
	root = &ServiceRoot{}
	if _, err := c.send(ctx, http.MethodGet, RootURI, "", false, nil, root); err != nil {
		return nil, fmt.Errorf("service root: %w", err)
	}
	c.mu.Lock()
	c.root = root
	c.mu.Unlock()
	return root, nil
}

// Get reads the resource at uri (an @odata.id) into into.
func (c *Client) Get(ctx context.Context, uri string, into any) error {
	_, err := c.do(ctx, http.MethodGet, uri, nil, into)
	return err
}

// Post sends body to uri (an action's target) and reads no answer.
func (c *Client) Post(ctx context.Context, uri string, body any) error {
	_, err := c.do(ctx, http.MethodPost, uri, body, nil)
	return err
}

// do sends an authenticated request. With sessions, a 401 on a session that
// was held is the session gone (expired, the BMC restarted): the client logs
// in again, once, and repeats the request.
func (c *Client) do(ctx context.Context, method, uri string, body, into any) (http.Header, error) {
	for attempt := 0; ; attempt++ {
		token, err := c.sessionToken(ctx)
		if err != nil {
			return nil, err
		}
		h, err := c.send(ctx, method, uri, token, true, body, into)
		if errors.Is(err, ErrUnauthorized) && token != "" && attempt == 0 {
			c.forget(token)
			klog.FromContext(ctx).V(4).Info("Redfish session refused, logging in again", "endpoint", c.Endpoint())
			continue
		}
		return h, err
	}
}

// send makes one request: with the session's token when there is one, with
// basic auth when the client uses it and the request is authenticated.
func (c *Client) send(ctx context.Context, method, uri, token string, authenticated bool, body, into any) (http.Header, error) {
	u, err := c.resolve(uri)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, uri, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, uri, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("OData-Version", "4.0")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch {
	case token != "":
		req.Header.Set("X-Auth-Token", token)
	case authenticated && c.auth == AuthBasic:
		req.SetBasicAuth(c.user, c.pass)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, uri, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read the answer: %w", method, uri, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("%s %s: %w", method, uri, &StatusError{Code: resp.StatusCode, Message: errorMessage(data)})
	}
	if len(data) > maxBody {
		return nil, fmt.Errorf("%s %s: %w: more than %d bytes", method, uri, ErrMalformed, maxBody)
	}
	if into != nil {
		if err := json.Unmarshal(data, into); err != nil {
			return nil, fmt.Errorf("%s %s: %w: %w", method, uri, ErrMalformed, err)
		}
	}
	return resp.Header, nil
}

// resolve turns a link into a URL of the BMC. Links are absolute paths
// under /redfish/; a link to another host or scheme is refused, so that the
// credentials go only to the endpoint configured.
func (c *Client) resolve(link string) (*url.URL, error) {
	u, err := url.Parse(link)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrBadLink, link, err)
	}
	if u.IsAbs() || u.Host != "" {
		if u.Scheme != c.base.Scheme || u.Host != c.base.Host {
			return nil, fmt.Errorf("%w: %q", ErrBadLink, link)
		}
	}
	if !strings.HasPrefix(u.Path, "/redfish/") {
		return nil, fmt.Errorf("%w: %q is not under /redfish/", ErrBadLink, link)
	}
	return c.base.ResolveReference(&url.URL{Path: u.Path, RawQuery: u.RawQuery}), nil
}

// errorMessage is the message of a Redfish error answer, or "".
func errorMessage(data []byte) string {
	var e struct {
		Error struct {
			Message  string `json:"message"`
			Extended []struct {
				Message string `json:"Message"`
			} `json:"@Message.ExtendedInfo"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil {
		return ""
	}
	if len(e.Error.Extended) > 0 && e.Error.Extended[0].Message != "" {
		return e.Error.Extended[0].Message
	}
	return e.Error.Message
}

// CloseIdleConnections closes the connections kept for the next request.
func (c *Client) CloseIdleConnections() { c.transport.CloseIdleConnections() }
