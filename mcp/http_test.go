package mcp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hippocam/hippocam/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// keyTransport sends the API key it holds now with every request.
type keyTransport struct{ key atomic.Value }

func (k *keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if key, _ := k.key.Load().(string); key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// httpClient connects an MCP client to /mcp, sending the key keys holds at each request.
func (w *world) httpClient(keys *keyTransport) *sdk.ClientSession {
	w.t.Helper()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: w.http.URL + "/mcp", HTTPClient: &http.Client{Transport: keys}, MaxRetries: -1}, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { cs.Close() })
	return cs
}

// Over Streamable HTTP every request is authenticated like any other endpoint's, and served as
// the tenant its key names at that request: a client whose key changes sees the other tenant
// from its next call on, whatever it was told at initialization.
func TestHTTPTenantPerRequest(t *testing.T) {
	w := newWorld(t)
	w.shopSession("acme", "ours")
	w.shopSession("other", "theirs")
	keys := &keyTransport{}
	keys.key.Store("k-acme")
	cs := w.httpClient(keys)
	var listed struct{ Sessions []struct{ ID string } }
	ok(t, cs, mcp.ToolListSessions, nil, &listed)
	if len(listed.Sessions) != 1 || listed.Sessions[0].ID != "ours" {
		t.Fatalf("acme lists %+v", listed)
	}
	var found struct{ Hits []any }
	ok(t, cs, mcp.ToolSearchMemory, map[string]any{"session": "ours", "query": "Dana"}, &found)
	if len(found.Hits) != 1 {
		t.Fatalf("acme's search: %+v", found)
	}
	keys.key.Store("k-other")
	ok(t, cs, mcp.ToolListSessions, nil, &listed)
	if len(listed.Sessions) != 1 || listed.Sessions[0].ID != "theirs" {
		t.Fatalf("with other's key the same client lists %+v", listed)
	}
	if got := toolError(t, cs, mcp.ToolSearchMemory, map[string]any{"session": "ours", "query": "Dana"}); got != `not_found: session "ours" not found` {
		t.Fatalf("other searching acme's session: %q", got)
	}
	keys.key.Store("k-wrong")
	if _, err := cs.ListTools(context.Background(), nil); err == nil {
		t.Fatal("a wrong key was served")
	}
}

// A missing or wrong key is the 401 every endpoint gives, before MCP reads the request: the same
// body, and nothing of any tenant in it. GET and DELETE are authenticated too; the stateless
// server keeps no session for DELETE to end (a GET opens the tenant's notification stream:
// TestHTTPStream).
func TestHTTPUnauthorized(t *testing.T) {
	w := newWorld(t)
	w.shopSession("acme", "ours")
	_, reference := w.rest("", "/api/sessions")
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}`
	for _, c := range []struct {
		method, key, body string
		status            int
	}{
		{"POST", "", initialize, 401},
		{"POST", "k-wrong", initialize, 401},
		{"POST", "", list, 401},
		{"POST", "Bearer", list, 401},
		{"GET", "", "", 401},
		{"DELETE", "k-wrong", "", 401},
		{"DELETE", "k-acme", "", 405},
		{"POST", "k-acme", list, 200},
	} {
		req, _ := http.NewRequest(c.method, w.http.URL+"/mcp", strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.key != "" {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s /mcp key %q: %d %s, want %d", c.method, c.key, resp.StatusCode, body, c.status)
			continue
		}
		switch {
		case c.status == 401 && string(body) != reference:
			t.Errorf("%s /mcp key %q: 401 body %s, want the one every endpoint gives: %s", c.method, c.key, body, reference)
		case c.status == 200 && !strings.Contains(string(body), "ours"):
			t.Errorf("an authenticated call without initialization: %s", body)
		}
	}
}

// A client of the session protocol (2025-11-25) over /mcp subscribes by a request that is its
// own exchange, and hears of changes on the GET stream it opens: every change of its key's
// tenant, never another's. A GET under a Host that is not the loopback one it arrived on is
// refused (DNS rebinding), as the SDK refuses other methods.
func TestHTTPStream(t *testing.T) {
	w := newWorld(t)
	wa, c := newWatcher(t)
	keys := &keyTransport{}
	keys.key.Store("k-acme")
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: w.http.URL + "/mcp",
		HTTPClient: &http.Client{Transport: keys}, MaxRetries: -1}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	wa.cs = cs
	uri := "hippocam://sessions/visit/expand"
	wa.subscribe(uri, false)

	// A raw stream of the other tenant, read beside.
	req, _ := http.NewRequest("GET", w.http.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer k-other")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /mcp: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	otherGot := make(chan string, 10)
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(b)
			if n > 0 {
				otherGot <- string(b[:n])
			}
			if err != nil {
				return
			}
		}
	}()

	time.Sleep(200 * time.Millisecond) // the client's GET stream opens after initialization
	a := w.agent("acme", "visit")
	a.say("!say hello")
	wa.expectList()
	wa.expect(uri)
	a.say("!say more")
	wa.expect(uri)
	select {
	case got := <-otherGot:
		t.Fatalf("the other tenant's stream got %q", got)
	case <-time.After(200 * time.Millisecond):
	}

	// DNS rebinding: a loopback server reached under another name.
	req, _ = http.NewRequest("GET", w.http.URL+"/mcp", nil)
	req.Host = "evil.example"
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer k-acme")
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusForbidden {
		t.Fatalf("GET /mcp under Host evil.example: %d, want 403", resp2.StatusCode)
	}
}

// The long-lived answers of /mcp (a GET stream, a subscriptions/listen) end when the HTTP server
// shuts down, so that its Shutdown, which waits for every request, returns.
func TestHTTPShutdown(t *testing.T) {
	w := newWorld(t)
	wa, c := newWatcher(t)
	keys := &keyTransport{}
	keys.key.Store("k-acme")
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: w.http.URL + "/mcp",
		HTTPClient: &http.Client{Transport: keys}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	wa.cs = cs
	wa.ack() // its listen is open
	req, _ := http.NewRequest("GET", w.http.URL+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer k-acme")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /mcp: %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	if err := w.http.Config.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with MCP streams open: %v after %v", err, time.Since(began))
	}
}

// Streams of a server started after another one shut down live on: the end is per server.
func TestHTTPStreamAfterAnotherShutdown(t *testing.T) {
	w := newWorld(t)
	second := httptest.NewServer(w.http.Config.Handler)
	t.Cleanup(second.Close)
	open := func(base string) *http.Response {
		req, _ := http.NewRequest("GET", base+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer k-acme")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET /mcp: %v %v", err, resp)
		}
		return resp
	}
	first := open(w.http.URL)
	first.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.http.Config.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	resp := open(second.URL)
	defer resp.Body.Close()
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); ended <- err }()
	select {
	case err := <-ended:
		t.Fatalf("the second server's stream ended at once (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
}
