package record

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai"
)

// echo answers every call with the text of its last message.
type echo struct {
	gate chan struct{} // when set, a call waits for it
}

func (e *echo) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	if e.gate != nil {
		<-e.gate
	}
	last := req.Messages[len(req.Messages)-1].Content
	return &hippocam.Response{Message: hippocam.Message{Role: hippocam.RoleAssistant, Content: last}, FinishReason: "stop",
		Usage: hippocam.CallUsage{Input: 10, CachedInput: 4, Output: 2}}, nil
}

func lines(t *testing.T, path string) []Line {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Line
	for _, l := range bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n")) {
		var x Line
		if err := json.Unmarshal(l, &x); err != nil {
			t.Fatalf("not a JSON line: %v: %q", err, l)
		}
		out = append(out, x)
	}
	return out
}

func open(t *testing.T) *Recorder {
	t.Helper()
	r, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// Many sessions calling at once: every call is one whole line of its own session's file.
func TestConcurrentSessions(t *testing.T) {
	r := open(t)
	m := r.Model(&echo{})
	const sessions, calls = 8, 50
	var wg sync.WaitGroup
	for s := range sessions {
		for c := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := hippocam.WithCallSession(context.Background(), "t", fmt.Sprintf("s/%d", s))
				text := fmt.Sprintf("call %d of %d %s", c, s, strings.Repeat("x", 5000))
				if _, err := m.Complete(ctx, &hippocam.Request{Role: hippocam.CallJanus, Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: text}}}); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	r.Flush()
	for s := range sessions {
		got := lines(t, r.Path("t", fmt.Sprintf("s/%d", s)))
		if len(got) != calls {
			t.Fatalf("session %d: %d lines, want %d", s, len(got), calls)
		}
		seen := map[string]bool{}
		for _, l := range got {
			if l.Session != fmt.Sprintf("s/%d", s) || l.Role != hippocam.CallJanus || l.Usage.CachedInput != 4 || l.Response == nil {
				t.Fatalf("line %+v", l)
			}
			if !strings.HasSuffix(strings.Fields(l.Response.Content)[3], fmt.Sprint(s)) {
				t.Fatalf("session %d holds another's call: %q", s, l.Response.Content[:20])
			}
			seen[l.Response.Content] = true
		}
		if len(seen) != calls {
			t.Fatalf("session %d: %d distinct calls", s, len(seen))
		}
	}
	if r.Lines() != sessions*calls || r.Failures() != 0 {
		t.Fatalf("%d lines, %d failures", r.Lines(), r.Failures())
	}
}

// A deleted session's file is gone, and a call that began before the deletion and ended after
// it does not bring it back; a call that begins later does.
func TestRemove(t *testing.T) {
	r := open(t)
	gate := make(chan struct{})
	slow, fast := r.Model(&echo{gate: gate}), r.Model(&echo{})
	ctx := hippocam.WithCallSession(context.Background(), "t", "s")
	req := &hippocam.Request{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "hi"}}}
	if _, err := fast.Complete(ctx, req); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { slow.Complete(ctx, req); close(done) }()
	time.Sleep(20 * time.Millisecond) // the slow call has begun
	r.Flush()
	path := r.Path("t", "s")
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove("t", "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after Remove: %v", err)
	}
	close(gate)
	<-done
	r.Flush()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a call of the deleted session brought its file back: %v", err)
	}
	if err := r.Remove("t", "s"); err != nil {
		t.Fatalf("removing what is gone: %v", err)
	}
	time.Sleep(2 * time.Millisecond)
	if _, err := fast.Complete(ctx, req); err != nil {
		t.Fatal(err)
	}
	r.Flush()
	if got := lines(t, path); len(got) != 1 {
		t.Fatalf("a later session of that name: %d lines", len(got))
	}
}

// A write that fails is counted and logged; the call still succeeds.
func TestWriteFailure(t *testing.T) {
	r := open(t)
	if err := os.WriteFile(filepath.Join(r.Dir(), "t"), []byte("a file where a directory goes"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := r.Model(&echo{})
	ctx := hippocam.WithCallSession(context.Background(), "t", "s")
	resp, err := m.Complete(ctx, &hippocam.Request{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "hi"}}})
	if err != nil || resp.Message.Content != "hi" {
		t.Fatalf("the call failed with the recording: %v %v", resp, err)
	}
	r.Flush()
	if r.Failures() != 1 || r.Lines() != 0 {
		t.Fatalf("%d failures, %d lines", r.Failures(), r.Lines())
	}
}

func TestFileName(t *testing.T) {
	names := []string{"", "a", "A", "_", "_5f", ".", "..", "../x", "a/b", "a_2fb", "a b", "é", "_none", "-x", "a.b"}
	seen := map[string]string{}
	for _, n := range names {
		f := FileName(n)
		if strings.ContainsAny(f, `/\`) || strings.HasPrefix(f, ".") || strings.HasPrefix(f, "_n") {
			t.Errorf("FileName(%q) = %q", n, f)
		}
		if o, dup := seen[f]; dup {
			t.Errorf("FileName(%q) = FileName(%q) = %q", n, o, f)
		}
		seen[f] = n
	}
	r := &Recorder{dir: "/d"}
	if p := r.Path("", ""); p != "/d/_none/_none.jsonl" {
		t.Errorf("Path of no tenant, no session: %s", p)
	}
	if p := r.Path("acme", "../../etc/passwd"); p != "/d/acme/_2e._2f.._2fetc_2fpasswd.jsonl" {
		t.Errorf("Path: %s", p)
	}
}

// A component call's line waits for the caller's judgement: the attempt, the problems, and the
// case with its messages in the chat-completions shape and the answer from the role's tool call.
func TestNote(t *testing.T) {
	r := open(t)
	m := r.Model(modelFunc(func(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
		return &hippocam.Response{Message: hippocam.Message{Role: hippocam.RoleAssistant,
			ToolCalls: []hippocam.ToolCall{{ID: "c1", Name: "other", Arguments: `{"x":1}`}, {ID: "c2", Name: "palim_answer", Arguments: `{"narrative":"n"}`}}}}, nil
	}))
	ctx := hippocam.WithCallSession(context.Background(), "t", "s")
	msgs := []hippocam.Message{
		{Role: hippocam.RoleUser, Content: "one"},
		{Role: hippocam.RoleAssistant, Content: "two"},
		{Role: hippocam.RoleUser, Content: "three"},
	}
	note := &hippocam.CallNote{Attempt: 2, Case: func() *hippocam.CallCase {
		return &hippocam.CallCase{Role: hippocam.CallPalim, Messages: msgs, Lo: 1, Tool: "palim_answer"}
	}}
	if _, err := m.Complete(hippocam.WithCallNote(ctx, note), &hippocam.Request{Role: hippocam.CallPalim, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	r.Flush()
	if _, err := os.Stat(r.Path("t", "s")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the line was written before the caller judged the answer: %v", err)
	}
	note.Refuse("the narrative is too short")
	note.Done()
	r.Flush()
	got := lines(t, r.Path("t", "s"))
	if len(got) != 1 {
		t.Fatalf("%d lines", len(got))
	}
	l := got[0]
	if l.Attempt != 2 || len(l.Problems) != 1 || l.Case == nil || l.Case.Answer != `{"narrative":"n"}` || fmt.Sprint(l.Case.Span) != "[1 2]" || len(l.Case.Messages) != 3 {
		t.Fatalf("line %+v case %+v", l, l.Case)
	}
	var first struct{ Role, Content string }
	if err := json.Unmarshal(l.Case.Messages[0], &first); err != nil || first.Role != "user" || first.Content != "one" {
		t.Fatalf("case message %s", l.Case.Messages[0])
	}
}

type modelFunc func(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error)

func (f modelFunc) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	return f(ctx, req)
}

// Under a real client: the line holds the body as sent and counts the tries of a call the
// client repeated, and never the API key.
func TestTransport(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer sk-secret" || req.Header.Get(hippocam.RoleHeader) != "precip" {
			t.Errorf("headers %v", req.Header)
		}
		if n.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"fine"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":1}}`)
	}))
	defer srv.Close()
	r := open(t)
	cfg := openai.DefaultConfig()
	cfg.BaseURL, cfg.APIKey, cfg.Model, cfg.MinBackoff, cfg.MaxBackoff = srv.URL, "sk-secret", "m", time.Millisecond, time.Millisecond
	cfg.HTTPClient = &http.Client{Transport: r.Transport(nil)}
	c, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := r.Model(c)
	if _, ok := m.(hippocam.StreamModel); !ok {
		t.Fatal("the wrapped client no longer streams")
	}
	ctx := hippocam.WithCallSession(context.Background(), "t", "s")
	if _, err := m.Complete(ctx, &hippocam.Request{Role: hippocam.CallPrecip, Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "hello"}}}); err != nil {
		t.Fatal(err)
	}
	r.Flush()
	raw, _ := os.ReadFile(r.Path("t", "s"))
	if bytes.Contains(raw, []byte("sk-secret")) {
		t.Fatal("the API key reached the recording")
	}
	l := lines(t, r.Path("t", "s"))[0]
	var body struct {
		Model    string `json:"model"`
		Messages []struct{ Content string }
	}
	if err := json.Unmarshal(l.Request, &body); err != nil || body.Model != "m" || body.Messages[0].Content != "hello" {
		t.Fatalf("request %s: %v", l.Request, err)
	}
	if l.Tries != 2 || l.Usage.Input != 7 || l.Response.Content != "fine" || l.TTFBMS <= 0 || l.RequestBytes != len(l.Request) {
		t.Fatalf("line %+v", l)
	}
}
