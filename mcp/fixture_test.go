package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/mcp"
	"github.com/hippocam/hippocam/memory/library"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/sessions"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/hippocam/hippocam/tokenizer"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tests' world: a SQLite store, the simulated model, routed learning over every memory
// system, the HTTP server (REST API, proxy, /mcp) with two tenants, and the MCP server over the
// same services.

var testKeys = map[string]string{"k-acme": "acme", "k-other": "other"}

type world struct {
	t     *testing.T
	path  string // the SQLite file
	store *sqlite.DB
	svc   *sessions.Service
	http  *httptest.Server
	mcp   *mcp.Server
}

func newWorld(t *testing.T) *world { return newWorldWith(t, mcp.Config{}, sessions.LearnRouted) }

// newWorldWith makes the world with cfg's settings for the MCP server (Version and
// WaitForUpdates are set unless Version is given) and the learning mode learnMode.
func newWorldWith(t *testing.T, cfg mcp.Config, learnMode string) *world {
	t.Helper()
	path := t.TempDir() + "/h.db"
	db, svc, srv := newStack(t, path, learnMode, 0)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	if cfg.Version == "" {
		cfg.Version, cfg.WaitForUpdates = "test", true
	}
	m, err := srv.MCP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, path: path, store: db, svc: svc, http: ts, mcp: m}
}

// newStack opens the SQLite file at path and builds the session service (cacheMessages as
// sessions.Config's) and the HTTP server over it.
func newStack(t *testing.T, path, learnMode string, cacheMessages int) (*sqlite.DB, *sessions.Service, *httpapi.Server) {
	t.Helper()
	tok := tokenizer.MustDefault()
	model, err := openai.New(openai.Config{BaseURL: "http://sim.local/v1", Model: sim.ModelID,
		HTTPClient: &http.Client{Transport: sim.New(tok).Transport()}})
	if err != nil {
		t.Fatal(err)
	}
	ecfg := engine.ForWindow(8000)
	ecfg.Janus = engine.JanusGate // the fixture's closes are consolidated in the step that closes them
	e, err := engine.New(ecfg, model, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sqlite.New(path)
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	env := &learn.Env{Model: model, Tok: tok}
	systems, err := library.Library(env, library.Names())
	if err != nil {
		t.Fatal(err)
	}
	svc, err := sessions.New(sessions.Config{Engine: e, Store: db, Inline: true, Learn: learnMode, Systems: systems, LearnEnv: env, CacheMessages: cacheMessages})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: db, Sessions: svc, Upstream: model, Keys: testKeys})
	if err != nil {
		t.Fatal(err)
	}
	return db, svc, srv
}

// client connects an MCP client to the tenant's server over the SDK's in-memory transports.
func (w *world) client(tenant string) *sdk.ClientSession {
	w.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ct, st := sdk.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- w.mcp.Serve(ctx, tenant, st) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}

// agent is a proxied agent of a tenant: it resends its whole history to the session service
// each turn, as an agent behind hippocam serve does.
type agent struct {
	w       *world
	tenant  string
	session string
	history []hippocam.Message
}

func (w *world) agent(tenant, session string) *agent {
	return &agent{w: w, tenant: tenant, session: session}
}

// say sends a user message and returns the answer's text.
func (a *agent) say(text string) string {
	a.w.t.Helper()
	a.history = append(a.history, userMessage(text))
	if err := a.turn(); err != nil {
		a.w.t.Fatal(err)
	}
	return a.history[len(a.history)-1].Content
}

// turn sends the history and appends the answer; it may run on any goroutine.
func (a *agent) turn() error {
	res, err := a.w.svc.Continue(context.Background(), &sessions.Request{Tenant: a.tenant, Name: a.session, Received: time.Now(),
		Conversation: &hippocam.Conversation{Format: hippocam.FormatChat, Messages: slices.Clone(a.history)}})
	if err != nil {
		return fmt.Errorf("%s/%s: %w", a.tenant, a.session, err)
	}
	a.history = append(a.history, res.Answer)
	return nil
}

func userMessage(text string) hippocam.Message {
	return hippocam.Message{Role: hippocam.RoleUser, Content: text}
}

// The task every test session starts with: routed to a lessons cluster by the simulated
// router's directive, with a decision the simulated agent makes.
const (
	taskText = "#route lessons | shop visits\nVisit the shop\ntags: shop weekly\ndecide greeting: formal | casual | brief"
	scope    = "shop visits"
)

// shopSession runs a proxied task in session id: the task, then an intent that closes, so that
// the message naming the shop's owner (Dana) is archived beneath a memory.
func (w *world) shopSession(tenant, id string) *agent {
	a := w.agent(tenant, id)
	a.say(taskText)
	a.say("#open Meet the owner | the owner is met\n!say meeting")
	a.say("The owner of the shop is called Dana, and the shop's code is QX-" + id + ".\n!say noted")
	a.say("#close Meet the owner\n!say met")
	return a
}

// call calls a tool and fails the test on a protocol error.
func call(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	return res
}

// ok calls a tool that must succeed and decodes its structured result into out.
func ok(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any, out any) string {
	t.Helper()
	res := call(t, cs, tool, args)
	if res.IsError {
		t.Fatalf("%s %v: tool error %s", tool, args, textOf(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: structured result %s: %v", tool, b, err)
	}
	return textOf(res)
}

// toolError calls a tool that must fail with a tool error and returns its text.
func toolError(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res := call(t, cs, tool, args)
	if !res.IsError {
		t.Fatalf("%s %v succeeded: %s", tool, args, textOf(res))
	}
	return textOf(res)
}

func textOf(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// read reads a resource's text.
func read(t *testing.T, cs *sdk.ClientSession, uri string) string {
	t.Helper()
	res, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("read %s: %d contents", uri, len(res.Contents))
	}
	return res.Contents[0].Text
}

// rest GETs a REST path with the tenant's key and returns status and body.
func (w *world) rest(key, path string) (int, string) {
	w.t.Helper()
	req, _ := http.NewRequest("GET", w.http.URL+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
