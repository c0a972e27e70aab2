package cli

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hippocam/hippocam/sim"
)

// Through the binaries: a client of `hippocam mcp` over stdio, beside a serve on the same file,
// and a client of serve's /mcp over Streamable HTTP, both subscribed to the expansion of a session
// that does not exist yet; an agent's first turn through serve's proxy creates it, and both are
// told (stdio by reading the store every --watch, HTTP on its subscriptions/listen stream); the
// next turn, the same. Both complete the session's id.
func TestMCPNotifications(t *testing.T) {
	bin := hippocamBuild.Bin(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	simAddr, addr := freeAddr(t), freeAddr(t)
	upstream := "http://" + simAddr + "/v1"
	startSim(t, simAddr, sim.Latency{})
	start(t, "http://"+addr+"/healthz", "serve", "--addr", addr, "--db", db, "--upstream", upstream, "--model", "hippocam-sim")
	api := &restClient{t: t, base: "http://" + addr}
	if _, err := api.chat("", "first", []map[string]string{{"role": "user", "content": "!say hello"}}); err != nil {
		t.Fatal(err) // the store exists before hippocam mcp opens it
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type client struct {
		name    string
		cs      *sdk.ClientSession
		updated chan string
		listed  chan struct{}
	}
	connect := func(name string, tr sdk.Transport, acked chan struct{}) *client {
		c := &client{name: name, updated: make(chan string, 100), listed: make(chan struct{}, 100)}
		cl := sdk.NewClient(&sdk.Implementation{Name: "notify-test", Version: "1"}, &sdk.ClientOptions{
			ResourceUpdatedHandler:     func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { c.updated <- r.Params.URI },
			ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { c.listed <- struct{}{} },
		})
		cl.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
			return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
				if method == "notifications/subscriptions/acknowledged" && acked != nil {
					acked <- struct{}{}
				}
				return next(ctx, method, req)
			}
		})
		cs, err := cl.Connect(ctx, tr, &sdk.ClientSessionOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() { cs.Close() })
		c.cs = cs
		return c
	}
	stdio := connect("stdio", &sdk.CommandTransport{Command: exec.Command(bin, "mcp", "--db", db, "--watch", "50ms")}, nil)
	acked := make(chan struct{}, 10)
	web := connect("http", &sdk.StreamableClientTransport{Endpoint: api.base + "/mcp", MaxRetries: -1}, acked)
	const uri = "hippocam://sessions/visit/expand"
	for _, c := range []*client{stdio, web} {
		if err := c.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("%s: subscribe: %v", c.name, err)
		}
	}
	for range 2 { // the listen stream of list changes, then the subscription's
		select {
		case <-acked:
		case <-ctx.Done():
			t.Fatal("the HTTP subscription was not acknowledged")
		}
	}
	time.Sleep(300 * time.Millisecond) // hippocam mcp's first reading of the store
	expect := func(what string) {
		t.Helper()
		for _, c := range []*client{stdio, web} {
			for got := ""; got != uri; {
				select {
				case got = <-c.updated:
				case <-time.After(20 * time.Second):
					t.Fatalf("%s: no notification of %s after %s", c.name, uri, what)
				}
			}
		}
	}
	history := []map[string]string{{"role": "user", "content": "!say hello"}}
	answer, err := api.chat("", "visit", history)
	if err != nil {
		t.Fatal(err)
	}
	expect("the session's creation")
	for _, c := range []*client{stdio, web} {
		select {
		case <-c.listed:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no notification that the list changed", c.name)
		}
		res, err := c.cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/resource", URI: "hippocam://sessions/{id}/expand"},
			Argument: sdk.CompleteParamsArgument{Name: "id", Value: "vi"}})
		if err != nil || !slices.Equal(res.Completion.Values, []string{"visit"}) {
			t.Fatalf("%s: completion of vi: %+v (%v)", c.name, res, err)
		}
	}
	history = append(history, map[string]string{"role": "assistant", "content": answer}, map[string]string{"role": "user", "content": "!say more"})
	if _, err := api.chat("", "visit", history); err != nil {
		t.Fatal(err)
	}
	expect("a step")
}
