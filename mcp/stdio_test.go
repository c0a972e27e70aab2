package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// Over stdio, a line that is not JSON gets a parse error and the connection goes on: the
// requests after it are answered.
func TestStdioParseError(t *testing.T) {
	w := newWorld(t)
	in := strings.Join([]string{
		`{not json`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		``,
		`garbage`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	}, "\n") + "\n"
	// The client keeps its end open until its last request is answered, as real clients do.
	out := &syncBuffer{}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.mcp.ServeStdio(ctx, "acme", pr, out) }()
	if _, err := io.WriteString(pw, in); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(out.String(), `"id":2,`) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	var parseErrors int
	answered := map[float64]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID    any `json:"id"`
			Error *struct {
				Code int `json:"code"`
			} `json:"error"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a line of output is not JSON: %q", line)
		}
		switch {
		case m.Error != nil && m.Error.Code == -32700 && m.ID == nil:
			parseErrors++
		case m.Result != nil:
			if id, ok := m.ID.(float64); ok {
				answered[id] = true
			}
		}
	}
	if parseErrors != 2 || !answered[1] || !answered[2] {
		t.Errorf("%d parse errors, answered %v; want 2 and requests 1 and 2:\n%s", parseErrors, answered, out.String())
	}
}

// syncBuffer is a buffer safe for one writer and one reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
