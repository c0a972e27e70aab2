package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hippocam/hippocam/internal/sse"
)

// The tenant's notification stream over Streamable HTTP. /mcp is stateless: a client of the
// protocol versions up to 2025-11-25 (the TypeScript SDK's, most clients') subscribes by a
// request that is its own exchange, and then opens the GET stream the protocol offers for
// server messages; no session ties the two. So a GET stream, authenticated as every request is,
// carries every change notification of its tenant: resources/updated for each resource that
// changes, subscribed or not, and resources/list_changed. Clients of the stateless protocol
// listen with subscriptions/listen instead, which the SDK serves.

// streams are the open GET streams, by tenant.
type streams struct {
	mu sync.Mutex
	m  map[string]map[chan []byte]struct{}
}

// streamBuffer is how many notifications a stream holds for a slow client; more are dropped
// (they only say to read a resource again, and the next one says it too).
const streamBuffer = 64

// keepAlive is how often an idle stream sends a comment, so that proxies keep it open.
const keepAlive = 25 * time.Second

func (st *streams) add(tenant string) chan []byte {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.m == nil {
		st.m = map[string]map[chan []byte]struct{}{}
	}
	if st.m[tenant] == nil {
		st.m[tenant] = map[chan []byte]struct{}{}
	}
	ch := make(chan []byte, streamBuffer)
	st.m[tenant][ch] = struct{}{}
	return ch
}

func (st *streams) remove(tenant string, ch chan []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.m[tenant], ch)
	if len(st.m[tenant]) == 0 {
		delete(st.m, tenant)
	}
}

// open reports whether the tenant has a stream open.
func (st *streams) open(tenant string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.m[tenant]) > 0
}

// send queues a notification on each of the tenant's streams.
func (st *streams) send(tenant, method string, params any) {
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for ch := range st.m[tenant] {
		select {
		case ch <- msg:
		default: // a client that does not read: this one is dropped
		}
	}
}

// serveStream serves a GET stream of tenant until the client goes.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, tenant string) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	s.For(tenant) // the tenant's server, which notices need
	ch := s.streams.add(tenant)
	defer s.streams.remove(tenant, ch)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	events := sse.NewWriter(w)
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	done := s.ending.ch(r)
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-done:
			return
		case msg := <-ch:
			err = events.Event("message", msg)
		case <-tick.C:
			err = events.Comment("keep-alive")
		}
		if err != nil {
			return
		}
	}
}

// rebinding reports a request that arrived on a loopback address under a Host that is not one:
// a DNS rebinding attack from a browser, which the SDK refuses for the other methods too.
func rebinding(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && loopback(local.String()) && !loopback(r.Host)
}

// loopback reports whether a host (with or without a port) is a loopback address or localhost.
func loopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ending ends the long-lived answers of /mcp (GET streams, subscriptions/listen) when the HTTP
// server that serves them shuts down: http.Server.Shutdown waits for every request to end, and
// these would not. Each server has its own signal, so the streams of a server started after
// another shut down live on.
type ending struct {
	mu      sync.Mutex
	servers map[*http.Server]chan struct{}
	never   chan struct{} // for a request no server is known of (a test's handler call)
}

// ch returns the channel closed when the server that serves r shuts down.
func (e *ending) ch(r *http.Request) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	hs, ok := r.Context().Value(http.ServerContextKey).(*http.Server)
	if !ok {
		if e.never == nil {
			e.never = make(chan struct{})
		}
		return e.never
	}
	if e.servers == nil {
		e.servers = map[*http.Server]chan struct{}{}
	}
	done, ok := e.servers[hs]
	if !ok {
		done = make(chan struct{})
		e.servers[hs] = done
		// The closed channel stays: a stream the client reopens on a server that is shutting
		// down must end at once too, or Shutdown would wait for it.
		hs.RegisterOnShutdown(func() { close(done) })
	}
	return done
}

// untilEnding returns r with a context that also ends when the streams of its server end.
func (e *ending) untilEnding(r *http.Request) (*http.Request, func()) {
	ctx, cancel := context.WithCancel(r.Context())
	done := e.ch(r)
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return r.WithContext(ctx), cancel
}

// isListen reports whether a POST's body is a subscriptions/listen request, leaving the body
// to be read again. It reads at most max+1 bytes (the SDK refuses longer bodies).
func isListen(r *http.Request, max int64) bool {
	if r.Method != http.MethodPost || r.Body == nil {
		return false
	}
	if max <= 0 {
		max = sdk.DefaultMaxRequestBodyBytes
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}
	if err != nil || !bytes.Contains(b, []byte("subscriptions/listen")) {
		return false
	}
	var req struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(b, &req) == nil && req.Method == "subscriptions/listen"
}
