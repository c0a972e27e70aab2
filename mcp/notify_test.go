package mcp_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hippocam/hippocam/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// watcher is a client that records the change notifications it is sent.
type watcher struct {
	t       *testing.T
	cs      *sdk.ClientSession
	updated chan string   // the URIs of notifications/resources/updated
	listed  chan struct{} // notifications/resources/list_changed
	acked   chan struct{} // a subscriptions/listen stream was acknowledged
}

func newWatcher(t *testing.T) (*watcher, *sdk.Client) {
	wa := &watcher{t: t, updated: make(chan string, 100), listed: make(chan struct{}, 100), acked: make(chan struct{}, 100)}
	c := sdk.NewClient(&sdk.Implementation{Name: "watcher", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler:     func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { wa.updated <- r.Params.URI },
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { wa.listed <- struct{}{} },
	})
	c.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				wa.acked <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	return wa, c
}

// watch connects a watcher to the tenant's server over the in-memory transports, speaking
// protocol version (the SDK's latest when "").
func (w *world) watch(tenant, version string) *watcher {
	wa, c := newWatcher(w.t)
	ctx, cancel := context.WithCancel(context.Background())
	ct, st := sdk.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- w.mcp.Serve(ctx, tenant, st) }()
	cs, err := c.Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	wa.cs = cs
	return wa
}

// subscribe subscribes to uri and, in the stateless protocol (a subscriptions/listen stream),
// waits for the server to acknowledge it.
func (wa *watcher) subscribe(uri string, listen bool) {
	wa.t.Helper()
	if err := wa.cs.Subscribe(context.Background(), &sdk.SubscribeParams{URI: uri}); err != nil {
		wa.t.Fatalf("subscribe %s: %v", uri, err)
	}
	if listen {
		wa.ack()
	}
}

func (wa *watcher) ack() {
	wa.t.Helper()
	select {
	case <-wa.acked:
	case <-time.After(10 * time.Second):
		wa.t.Fatal("the subscription was not acknowledged")
	}
}

// expect waits for a notification that uri was updated.
func (wa *watcher) expect(uri string) {
	wa.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-wa.updated:
			if got == uri {
				return
			}
		case <-deadline:
			wa.t.Fatalf("no notification that %s was updated", uri)
		}
	}
}

// expectList waits for a notification that the list of resources changed.
func (wa *watcher) expectList() {
	wa.t.Helper()
	select {
	case <-wa.listed:
	case <-time.After(10 * time.Second):
		wa.t.Fatal("no notification that the list of resources changed")
	}
}

// quiet checks that no notification of uri comes for a while.
func (wa *watcher) quiet(uri string) {
	wa.t.Helper()
	deadline := time.After(300 * time.Millisecond)
	for {
		select {
		case got := <-wa.updated:
			if got == uri {
				wa.t.Fatalf("notified of %s", uri)
			}
		case <-deadline:
			return
		}
	}
}

const expandOf = "hippocam://sessions/%s/expand"

// Over the session protocol (resources/subscribe): a client subscribed to a session's expansion
// before the session exists is told of its creation (and the list's change) and of each step;
// one subscribed to the lessons file is told when an outcome teaches the cluster; after
// resources/unsubscribe nothing more comes. Another tenant's client, subscribed to the same
// URIs, is told nothing.
func TestSubscribeLegacy(t *testing.T) {
	w := newWorld(t)
	acme := w.watch("acme", "2025-11-25")
	other := w.watch("other", "2025-11-25")
	if caps := acme.cs.InitializeResult().Capabilities.Resources; caps == nil || !caps.Subscribe || !caps.ListChanged {
		t.Fatalf("resources capability %+v, want subscribe and listChanged", caps)
	}
	uri := "hippocam://sessions/visit/expand"
	for _, wa := range []*watcher{acme, other} {
		wa.subscribe(uri, false)
		wa.subscribe(mcp.LessonsURI, false)
	}
	a := w.agent("acme", "visit")
	a.say(taskText)
	acme.expectList()
	acme.expect(uri)
	a.say("!say more")
	acme.expect(uri)

	var ended struct{ Update string }
	ok(t, acme.cs, mcp.ToolReportOutcome, map[string]any{"session": "visit", "feedback": "feedback: greeting = formal wrong"}, &ended)
	if ended.Update != "done" {
		t.Fatalf("outcome: %+v", ended)
	}
	acme.expect(mcp.LessonsURI)

	if err := acme.cs.Unsubscribe(context.Background(), &sdk.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	w.agent("acme", "visit-2").say("!say hello") // another session: the list changes
	acme.expectList()
	acme.quiet(uri)

	other.quiet(uri)
	other.quiet(mcp.LessonsURI)
	select {
	case <-other.listed:
		t.Fatal("the other tenant was told acme's list changed")
	default:
	}
}

// In the stateless protocol (subscriptions/listen), over the in-memory transport and over /mcp
// (each request served as its key's tenant), the same notifications reach the listening client.
func TestSubscribeListen(t *testing.T) {
	w := newWorld(t)
	mem := w.watch("acme", "")
	mem.ack() // the list_changed stream opened at connection

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
	wa.ack()

	uri := "hippocam://sessions/visit/expand"
	for _, x := range []*watcher{mem, wa} {
		x.subscribe(uri, true)
	}
	a := w.agent("acme", "visit")
	a.say("!say hello")
	for _, x := range []*watcher{mem, wa} {
		x.expectList()
		x.expect(uri)
	}
	if err := wa.cs.Unsubscribe(context.Background(), &sdk.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	a.say("!say more")
	mem.expect(uri)
	wa.quiet(uri)
}
