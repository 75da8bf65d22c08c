package redfish

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"k8s.io/klog/v2"
)

// sessionToken is the session's token, logging in when there is none; ""
// with basic auth. Logins are one at a time, so that concurrent requests
// make one session.
func (c *Client) sessionToken(ctx context.Context) (string, error) {
	if c.auth != AuthSession {
		return "", nil
	}
	if t := c.currentToken(); t != "" {
		return t, nil
	}
	root, err := c.ServiceRoot(ctx)
	if err != nil {
		return "", err
	}
	c.loginMu.Lock()
	defer c.loginMu.Unlock()
	if t := c.currentToken(); t != "" {
		return t, nil // another request logged in meanwhile
	}
	token, uri, err := c.login(ctx, root)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.token, c.session = token, uri
	c.mu.Unlock()
	klog.FromContext(ctx).V(4).Info("Redfish session created", "endpoint", c.Endpoint(), "session", uri)
	return token, nil
}

func (c *Client) currentToken() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token
}

// forget drops a token the BMC refused, unless another request already
// replaced it.
func (c *Client) forget(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token == token {
		c.token, c.session = "", ""
	}
}

// login creates a session at the service's Sessions collection (found from
// the service root) and returns its token and URI.
func (c *Client) login(ctx context.Context, root *ServiceRoot) (token, uri string, err error) {
	sessions := root.Links.Sessions.ODataID
	if sessions == "" && root.SessionService.ODataID != "" {
		// Services before Redfish 1.6 name it only in SessionService.
		var ss SessionService
		if _, err := c.send(ctx, http.MethodGet, root.SessionService.ODataID, "", false, nil, &ss); err != nil {
			return "", "", fmt.Errorf("session service: %w", err)
		}
		sessions = ss.Sessions.ODataID
	}
	if sessions == "" {
		return "", "", fmt.Errorf("log in: %w: the service root links no Sessions", ErrMalformed)
	}
	var s struct {
		ODataID string `json:"@odata.id"`
	}
	h, err := c.send(ctx, http.MethodPost, sessions, "", false, map[string]string{"UserName": c.user, "Password": c.pass}, &s)
	if err != nil {
		return "", "", fmt.Errorf("log in: %w", err)
	}
	token = h.Get("X-Auth-Token")
	if token == "" {
		return "", "", fmt.Errorf("log in: %w: no X-Auth-Token", ErrMalformed)
	}
	uri = s.ODataID
	if loc := h.Get("Location"); loc != "" {
		if u, err := url.Parse(loc); err == nil {
			uri = u.Path
		}
	}
	return token, uri, nil
}

// Logout deletes the session, if there is one. A session the BMC no longer
// knows is not an error.
func (c *Client) Logout(ctx context.Context) error {
	c.mu.Lock()
	token, uri := c.token, c.session
	c.token, c.session = "", ""
	c.mu.Unlock()
	if token == "" || uri == "" {
		return nil
	}
	_, err := c.send(ctx, http.MethodDelete, uri, token, true, nil, nil)
	if err != nil && !isGone(err) {
		return fmt.Errorf("log out: %w", err)
	}
	return nil
}

// Close logs out and closes the idle connections.
func (c *Client) Close(ctx context.Context) error {
	err := c.Logout(ctx)
	c.CloseIdleConnections()
	return err
}

// HasSession says whether the client holds a session.
func (c *Client) HasSession() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token != ""
}
