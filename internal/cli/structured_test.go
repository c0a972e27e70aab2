package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/replay"
	"github.com/hippocam/hippocam/scenario"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// roleBody is a request the simulated upstream received for one of Hippocam's roles, and the
// status it answered.
type roleBody struct {
	role   hippocam.CallRole
	body   []byte
	status int
}

// recordingSim serves m and keeps the role requests (every one but the agent's) it answers.
func recordingSim(t *testing.T, m *sim.Model) (*httptest.Server, func() []roleBody) {
	var mu sync.Mutex
	var got []roleBody
	h := m.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		rw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rw, r)

		if role := hippocam.CallRole(r.Header.Get(hippocam.RoleHeader)); role != "" && role != hippocam.CallAgent && strings.HasSuffix(r.URL.Path, "s") {
			mu.Lock()
			got = append(got, roleBody{role, b, rw.status})
			mu.Unlock()
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []roleBody {
		mu.Lock()
		defer mu.Unlock()
		return append([]roleBody(nil), got...)
	}
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) { w.status = code; w.ResponseWriter.WriteHeader(code) }
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// native reports whether a role request asks for its answer natively in format: a
// response_format json_schema, strict, without tools (openai), or the contract as the only tool,
// forced (anthropic).
func native(t *testing.T, format string, b []byte) bool {
	t.Helper()
	var body struct {
		ResponseFormat *struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string `json:"name"`
				Strict bool   `json:"strict"`
			} `json:"json_schema"`
		} `json:"response_format"`
		Tools      []struct{ Name string } `json:"tools"`
		ToolChoice json.RawMessage         `json:"tool_choice"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatal(err)
	}
	if format == "openai" {
		if len(body.Tools) > 0 && string(body.ToolChoice) != `"none"` {
			t.Fatalf("a role request offers tools it may call: %s", clip(string(b)))
		}
		rf := body.ResponseFormat
		return rf != nil && rf.Type == "json_schema" && rf.JSONSchema.Strict && rf.JSONSchema.Name != ""
	}
	var tc struct{ Type, Name string }
	_ = json.Unmarshal(body.ToolChoice, &tc)
	if tc.Type != "tool" {
		// In prose: no tools, or the tools the history calls declared with tool_choice none
		// (the API refuses tool blocks in a request without tools).
		if len(body.Tools) > 0 && tc.Type != "none" {
			t.Fatalf("a prose role request offers tools: %s", clip(string(b)))
		}
		return false
	}
	if len(body.Tools) != 1 || body.Tools[0].Name != tc.Name {
		t.Fatalf("a role request forces %s among %d tools", body.ToolChoice, len(body.Tools))
	}
	return true
}

// The real binary's serve in front of the simulated upstream, in both upstream formats, in the
// default (auto) mode: every JANUS request asks natively (response_format json_schema, or a forced
// contract tool); PRECIP and PALIM requests extend the main request's prefix, so they ask in
// prose, with the schema, the agent's tools offered only with tool_choice none; the session's
// answers are the scenario's. With an upstream that refuses structured output, the first JANUS
// request is refused once, sent again in prose, and every later one goes in prose directly; the
// answers stay the same.
func TestServeStructuredOutputs(t *testing.T) {
	lines, err := scenario.ParseFile("../../scenarios/refactor.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := mustRead(t, "../../scenarios/refactor.expected")
	for _, tc := range []struct {
		format string
		refuse bool
	}{{"openai", false}, {"anthropic", false}, {"openai", true}, {"anthropic", true}} {
		name := tc.format
		if tc.refuse {
			name += "/refusing"
		}
		t.Run(name, func(t *testing.T) {
			m := sim.New(tokenizer.MustDefault())
			m.SetRefuseStructured(tc.refuse)
			srv, bodies := recordingSim(t, m)
			upstream := srv.URL + "/v1"
			if tc.format == "anthropic" {
				upstream = srv.URL
			}
			addr := freeAddr(t)
			// Consolidation in the step: the role calls come one at a time, so exactly one is
			// in flight when the upstream first refuses.
			start(t, "http://"+addr+"/healthz", "serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "s.db"), "--upstream", upstream,
				"--upstream-format", tc.format, "--context-window", "8000", "--model", "hippocam-sim", "--inline-consolidation")
			rep, err := replay.RunHTTP(context.Background(), replay.HTTPConfig{BaseURL: "http://" + addr + "/v1", Session: "s", Model: "hippocam-sim"}, lines)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(rep.Answers, "\n") + "\n"; got != want {
				t.Errorf("answers:\n%s\nwant:\n%s", got, want)
			}
			seen := map[hippocam.CallRole]int{}
			nativeCalls, refused := 0, 0
			for i, rb := range bodies() {
				seen[rb.role]++
				isNative := native(t, tc.format, rb.body)
				if isNative {
					nativeCalls++
				}
				if rb.status == http.StatusBadRequest {
					refused++
				} else if rb.status != http.StatusOK {
					t.Fatalf("role request %d: status %d", i, rb.status)
				}
				schema := bytes.Contains(rb.body, []byte("Schema of the answer"))
				switch {
				case !tc.refuse && rb.role == hippocam.CallJanus && !isNative:
					t.Fatalf("%s request %d in prose", rb.role, i)
				case rb.role != hippocam.CallJanus && isNative:
					t.Fatalf("%s request %d asked natively: it should extend the main request's prefix", rb.role, i)
				case isNative && schema:
					t.Fatalf("%s request %d repeats the schema in prose", rb.role, i)
				case !isNative && !schema:
					t.Fatalf("%s request %d in prose lacks the schema", rb.role, i)
				case tc.refuse && i > 0 && isNative:
					t.Fatalf("%s request %d asked natively after the refusal", rb.role, i)
				}
			}
			for _, role := range []hippocam.CallRole{hippocam.CallJanus, hippocam.CallPrecip, hippocam.CallPalim} {
				if seen[role] == 0 {
					t.Errorf("no %s request", role)
				}
			}
			if tc.refuse && (refused != 1 || m.StructuredRefusals() != 1 || nativeCalls != 1) {
				t.Errorf("%d refusals (sim counted %d), %d native requests; want one of each", refused, m.StructuredRefusals(), nativeCalls)
			}
			if !tc.refuse && refused != 0 {
				t.Errorf("%d refusals", refused)
			}
		})
	}
}
