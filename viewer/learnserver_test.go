package viewer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/library"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sessions"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/hippocam/hippocam/tokenizer"
	"github.com/hippocam/hippocam/viewer"
)

// learningServer is a real Hippocam server that learns (routed, over the memory systems named),
// the simulated model upstream, with the viewer mounted beside its API as hippocam serve mounts
// it.
type learningServer struct {
	*httptest.Server
	key string
}

func newLearningServer(t *testing.T, key string, systems ...string) *learningServer {
	t.Helper()
	tok := tokenizer.MustDefault()
	up := httptest.NewServer(sim.New(tok).Handler())
	t.Cleanup(up.Close)
	cfg := openai.DefaultConfig()
	cfg.BaseURL, cfg.Model, cfg.MaxRetries = up.URL+"/v1", sim.ModelID, 0
	model, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.ForWindow(8000), model, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sqlite.New(t.TempDir() + "/h.db")
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	env := &learn.Env{Model: model, Tok: tok}
	lib, err := library.Library(env, systems)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := sessions.New(sessions.Config{Engine: e, Store: db, Inline: true, Learn: sessions.LearnRouted, Systems: lib, LearnEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]string
	if key != "" {
		keys = map[string]string{key: "acme"}
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: db, Sessions: svc, Upstream: model, Keys: keys, Viewer: viewer.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &learningServer{Server: ts, key: key}
}

// call sends one request to the server's API, header holding name, value pairs, and returns
// the status and body.
func (s *learningServer) call(t *testing.T, method, path string, body []byte, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if s.key != "" {
		req.Header.Set("Authorization", "Bearer "+s.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// startTask sends a task's first request in session id, with its task key (when not empty),
// and returns the cluster the server names in its answer.
func (s *learningServer) startTask(t *testing.T, id, key, text string, header ...string) string {
	t.Helper()
	body, err := json.Marshal(wire.ChatRequest{Model: "m", Messages: []wire.ChatMessage{{Role: "user", Content: wire.StringContent(text)}}})
	if err != nil {
		t.Fatal(err)
	}
	header = append(header, httpapi.SessionHeader, id)
	if key != "" {
		header = append(header, httpapi.TaskHeader, key)
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", bytes.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if s.key != "" {
		req.Header.Set("Authorization", "Bearer "+s.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("task %s: status %d: %s", id, resp.StatusCode, b)
	}
	return resp.Header.Get(httpapi.ClusterHeader)
}

// endTask posts the task's outcome and waits for the cluster's update.
func (s *learningServer) endTask(t *testing.T, id, outcome string) {
	t.Helper()
	if status, body := s.call(t, http.MethodPost, "/api/sessions/"+id+"/outcome?wait=1", []byte(outcome)); status != http.StatusOK {
		t.Fatalf("outcome of %s: status %d: %s", id, status, body)
	}
}

const salesTask = "Sales report\ntags: revenue weekly\ndecide status_filter: shipped | all | pending"
