package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/tokenizer"
)

// recorder passes every call to inner and keeps the requests. With refuse, it refuses every
// structured request as a model client does once its upstream refused one.
type recorder struct {
	inner  hippocam.Model
	refuse bool
	mu     sync.Mutex
	reqs   []*hippocam.Request
}

func (r *recorder) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	if r.refuse && req.Structured != nil {
		return nil, &hippocam.StructuredRefusal{Upstream: "http://upstream.test/v1", Model: "m", Remembered: true}
	}
	return r.inner.Complete(ctx, req)
}

// roleSession runs a conversation with the agent's own tools that opens and closes intents
// until JANUS, PRECIP and PALIM have all been called, and returns the session.
func roleSession(t *testing.T, cfg engine.Config, m hippocam.Model) *hippocam.Session {
	t.Helper()
	e := mustEngine(t, cfg, m)
	st := inmem.New()
	tools := []hippocam.Tool{{Name: "work", Description: "Do some work.", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
		{Name: "look", Description: "Look around.", Parameters: json.RawMessage(`{"type":"object"}`)}}
	var last hippocam.Message
	send := func(msgs ...hippocam.Message) {
		t.Helper()
		res, err := e.Advance(context.Background(), st, "", "s1", engine.Input{Messages: msgs, Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		last = res.Answer
	}
	result := func(text string) hippocam.Message {
		return hippocam.Message{Role: hippocam.RoleTool, Content: text, ToolCallID: last.ToolCalls[0].ID}
	}
	user := func(text string) hippocam.Message { return hippocam.Message{Role: hippocam.RoleUser, Content: text} }
	for k := 0; k < 4; k++ {
		send(user(fmt.Sprintf("#open Task %d | task %d is done\n!call work {\"n\":%d}", k, k, k)))
		send(result(fmt.Sprintf("task_%d := ok\n%s", k, filler("t", 25))))
		send(user(fmt.Sprintf("#close Task %d\n!say finished %d", k, k)))
		send(user(fmt.Sprintf("!call look {\"n\":%d}", k)))
		send(result(fmt.Sprintf("look_%d := seen\n%s", k, filler("l", 40))))
	}
	send(user("!ask task_0"))
	if last.Content != "task_0 := ok" {
		t.Fatalf("!ask task_0 = %q", last.Content)
	}
	s, err := st.Session(context.Background(), "", "s1")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// instruction is a role request's final message without its last paragraph (what to answer).
func instruction(req *hippocam.Request) string {
	text := req.Messages[len(req.Messages)-1].Content
	return text[:strings.LastIndex(text, "\n\nAnswer as ")]
}

var contractTools = map[hippocam.CallRole]hippocam.Tool{
	hippocam.CallJanus: engine.JanusToolSpec, hippocam.CallPrecip: engine.PrecipToolSpec, hippocam.CallPalim: engine.PalimToolSpec}

// JANUS reads a view of its own: its requests offer no tools and ask for the contract natively
// (strict, the contract's name and schema, not repeated in prose) unless the mode is prose. PRECIP
// and PALIM requests share the main request's prefix: they are asked in prose, with the main
// request's tools in front and tool_choice "none", the schema and the role's prompt in their final
// message, unless the mode is native, where they offer no tools and ask natively. The main model's
// requests keep the agent's tools, recall and search.
func TestRoleRequestsAskForTheirContract(t *testing.T) {
	for _, mode := range []hippocam.StructuredMode{"", hippocam.StructuredProse, hippocam.StructuredNative} {
		t.Run(string(mode)+"mode", func(t *testing.T) {
			rec := &recorder{inner: mustSim(t)}
			cfg := engine.ForWindow(8000)
			cfg.Structured = mode
			s := roleSession(t, cfg, rec)
			if s.Consolidations.Intent == 0 || s.Consolidations.Prefix == 0 {
				t.Fatalf("consolidations %+v: the session must reach PRECIP and PALIM", s.Consolidations)
			}
			seen := map[hippocam.CallRole]int{}
			var mainTools []hippocam.Tool
			for _, req := range rec.reqs {
				if req.Role == hippocam.CallAgent {
					if len(req.Tools) < 3 {
						t.Errorf("a main request offers %d tools", len(req.Tools))
					}
					mainTools = req.Tools
					continue
				}
				seen[req.Role]++
				var text strings.Builder
				for _, m := range req.Messages {
					text.WriteString(m.Content)
				}
				schema := strings.Contains(text.String(), "Schema of the answer: ")
				prose := mode == hippocam.StructuredProse || (mode != hippocam.StructuredNative && req.Role != hippocam.CallJanus)
				switch {
				case prose && req.Role != hippocam.CallJanus:
					last := req.Messages[len(req.Messages)-1].Content
					if req.Structured != nil || req.ToolChoice != "none" || len(req.Tools) != len(mainTools) ||
						!strings.Contains(last, "Schema of the answer: ") || !strings.Contains(last, "# Your part") {
						t.Fatalf("%s request: structured %v, %d tools (main %d), tool_choice %q, final message %q; want prose behind the main request's tools, the role and schema last",
							req.Role, req.Structured, len(req.Tools), len(mainTools), req.ToolChoice, clip(last))
					}
				case prose:
					if req.Structured != nil || len(req.Tools) != 0 || !schema {
						t.Fatalf("%s request in prose mode: structured %v, %d tools, schema in prose %v", req.Role, req.Structured, len(req.Tools), schema)
					}
				default:
					want := contractTools[req.Role]
					if s := req.Structured; s == nil || s.Name != want.Name || string(s.Schema) != string(want.Parameters) || !s.Strict {
						t.Fatalf("%s request asks for %+v, want the contract %s, strict", req.Role, req.Structured, want.Name)
					}
					if len(req.Tools) != 0 || req.ToolChoice != "" || schema {
						t.Fatalf("%s request offers %d tools, tool_choice %q, schema in prose %v", req.Role, len(req.Tools), req.ToolChoice, schema)
					}
				}
			}
			for role := range contractTools {
				if seen[role] == 0 {
					t.Errorf("no %s request", role)
				}
			}
		})
	}
}

// usageRecorder passes every call to inner and keeps each request with the usage of its answer.
type usageRecorder struct {
	inner hippocam.Model
	mu    sync.Mutex
	reqs  []*hippocam.Request
	usage []hippocam.CallUsage
}

func (r *usageRecorder) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	resp, err := r.inner.Complete(ctx, req)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	if err != nil {
		r.usage = append(r.usage, hippocam.CallUsage{})
		return nil, err
	}
	r.usage = append(r.usage, resp.Usage)
	return resp, nil
}

// Below SharedPromptsFrom as well, a PRECIP or PALIM request is the main request it follows up to
// the end of its span, then one final message: the same tools, the same messages, no system
// message of its own. The simulated provider cache then serves all of it but that final message.
func TestRoleRequestsShareTheMainPrefix(t *testing.T) {
	rec := &usageRecorder{inner: mustSim(t)}
	tok := tokenizer.MustDefault()
	s := roleSession(t, engine.ForWindow(8000), rec)
	if s.Consolidations.Intent == 0 || s.Consolidations.Prefix == 0 {
		t.Fatalf("consolidations %+v: the session must reach PRECIP and PALIM", s.Consolidations)
	}
	shared := map[hippocam.CallRole]int{}
	var main *hippocam.Request
	for i, req := range rec.reqs {
		if req.Role == hippocam.CallAgent {
			main = req
			continue
		}
		if req.Role == hippocam.CallJanus {
			continue
		}
		n := len(req.Messages) - 1
		for _, m := range req.Messages[1:] {
			if m.Role == hippocam.RoleSystem {
				t.Fatalf("%s request carries a system message of its own", req.Role)
			}
		}
		if main == nil || n > len(main.Messages) || !sameTools(req.Tools, main.Tools) || !sameMessages(req.Messages[:n], main.Messages[:n]) {
			continue // the context changed since the main request (a fold or a memory in between)
		}
		shared[req.Role]++
		last := req.Messages[n]
		if u := rec.usage[i]; u.Input-u.CachedInput > hippocam.MessageTokens(tok, &last)+256 {
			t.Errorf("%s request: %d of %d input tokens uncached, its final message has %d", req.Role, u.Input-u.CachedInput, u.Input, hippocam.MessageTokens(tok, &last))
		}
	}
	if shared[hippocam.CallPrecip] == 0 || shared[hippocam.CallPalim] == 0 {
		t.Fatalf("requests that extend the main request's prefix: %v; want PRECIP and PALIM ones", shared)
	}
}

func sameTools(a, b []hippocam.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || string(a[i].Parameters) != string(b[i].Parameters) {
			return false
		}
	}
	return true
}

func sameMessages(a, b []hippocam.Message) bool {
	for i := range a {
		x, y := a[i], b[i]
		if x.Role != y.Role || x.Content != y.Content || x.ToolCallID != y.ToolCallID || len(x.ToolCalls) != len(y.ToolCalls) {
			return false
		}
		for j := range x.ToolCalls {
			if x.ToolCalls[j] != y.ToolCalls[j] {
				return false
			}
		}
	}
	return true
}

// An upstream that refuses structured requests gets each one again, the same, with the schema in
// prose, and the work goes on; in native mode the refusal is the component's error.
func TestStructuredRefusalFallsBackToProse(t *testing.T) {
	rec := &recorder{inner: mustSim(t), refuse: true}
	s := roleSession(t, engine.ForWindow(8000), rec)
	if s.Consolidations.Intent == 0 || s.Consolidations.Prefix == 0 {
		t.Fatalf("consolidations %+v after the fallback", s.Consolidations)
	}
	refused := 0
	for i, req := range rec.reqs {
		if req.Structured == nil {
			continue
		}
		refused++
		// The next request of that role (the main model's call may come between).
		var next *hippocam.Request
		for _, r := range rec.reqs[i+1:] {
			if r.Role == req.Role {
				next = r
				break
			}
		}
		if next == nil {
			t.Fatal("the refused request was not sent again")
		}
		// The role's system message is the first (JANUS's own view) or the second (after Hippocam's).
		roleSystem := next.Messages[0].Content + next.Messages[1].Content
		if next.Structured != nil || !strings.Contains(roleSystem, "Schema of the answer: ") ||
			instruction(next) != instruction(req) {
			t.Fatalf("after a refused %s request came a %s request (structured %v), not the same in prose", req.Role, next.Role, next.Structured)
		}
	}
	if refused == 0 {
		t.Fatal("no structured request was made")
	}

	rec = &recorder{inner: mustSim(t), refuse: true}
	cfg := engine.ForWindow(8000)
	cfg.Structured = hippocam.StructuredNative
	e := mustEngine(t, cfg, rec)
	_, err := e.Advance(context.Background(), inmem.New(), "", "s1", engine.Input{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "#open Task | done\n!say go"}}})
	for _, req := range rec.reqs {
		if req.Role != hippocam.CallAgent && req.Structured == nil {
			t.Fatalf("native mode sent a %s request in prose (step error %v)", req.Role, err)
		}
	}
}

// Under strict structured output a model writes null for every property it leaves out; the
// contracts' decoders read those as absent.
func TestContractsAcceptNulls(t *testing.T) {
	for _, tc := range []struct {
		role hippocam.CallRole
		args string
	}{
		{hippocam.CallJanus, `{"close":null,"open":null,"guidance":null}`},
		{hippocam.CallJanus, `{"close":null,"open":[{"label":"Fix the bug","reason":null,"done":"the test passes"}],"guidance":"I fix the bug."}`},
	} {
		if problems := engine.Check(tc.role, []hippocam.Message{{Role: hippocam.RoleUser, Content: "fix it"}}, 0, nil, tc.args); len(problems) > 0 {
			t.Errorf("%s %s: %v", tc.role, tc.args, problems)
		}
	}
	ctx := []hippocam.Message{{Role: hippocam.RoleUser, Content: "The build uses make, and make test runs the tests."}}
	palim := `{"narrative":"I read how the project builds.","knowledge":[{"fact":"The build uses make; make test runs the tests.","evaluation":"neutral","revises":null}]}`
	if problems := engine.Check(hippocam.CallPalim, ctx, 0, nil, palim); len(problems) > 0 {
		t.Errorf("palim with a null revises: %v", problems)
	}
	// Nulls where a value is required stay errors of the contract.
	if problems := engine.Check(hippocam.CallPalim, ctx, 0, nil, `{"narrative":null,"knowledge":[{"fact":null,"evaluation":null,"revises":null}]}`); len(problems) == 0 {
		t.Error("palim of nulls accepted")
	}
}

// Every contract has a strict form that keeps all of its properties.
func TestContractSchemasHaveStrictForms(t *testing.T) {
	for role, tool := range contractTools {
		strict, err := hippocam.StrictSchema(tool.Parameters)
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		var v map[string]any
		if err := json.Unmarshal(strict, &v); err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		if v["additionalProperties"] != false || len(v["required"].([]any)) != len(v["properties"].(map[string]any)) {
			t.Errorf("%s: strict root %s", role, strict)
		}
	}
}

// From SharedPromptsFrom on, a PRECIP request is the main request's prefix plus one message: in
// auto mode it is asked in prose with the main request's tools in front (tool_choice "none"), so
// a provider's cache serves it from the main call; JANUS, on a view of its own, is asked
// natively. Native mode asks every role natively.
func TestSharedPrefixRolesStayInProse(t *testing.T) {
	for _, mode := range []hippocam.StructuredMode{hippocam.StructuredAuto, hippocam.StructuredNative} {
		t.Run(string(mode), func(t *testing.T) {
			rec := &recorder{inner: mustSim(t)}
			cfg := engine.ForWindow(engine.SharedPromptsFrom)
			cfg.Structured = mode
			s := roleSession(t, cfg, rec)
			if s.Consolidations.Intent == 0 {
				t.Fatalf("consolidations %+v: the session must reach PRECIP", s.Consolidations)
			}
			var mainTools []hippocam.Tool
			seen := map[hippocam.CallRole]int{}
			for _, req := range rec.reqs {
				switch req.Role {
				case hippocam.CallAgent:
					mainTools = req.Tools
				case hippocam.CallPrecip:
					seen[req.Role]++
					shared := mode == hippocam.StructuredAuto
					if shared && (req.Structured != nil || req.ToolChoice != "none" || len(req.Tools) != len(mainTools) || len(mainTools) < 3) {
						t.Fatalf("auto: PRECIP request structured %v, %d tools (main %d), tool_choice %q; want prose behind the main request's tools", req.Structured, len(req.Tools), len(mainTools), req.ToolChoice)
					}
					if !shared && (req.Structured == nil || len(req.Tools) != 0) {
						t.Fatalf("native: PRECIP request structured %v, %d tools", req.Structured, len(req.Tools))
					}
				case hippocam.CallJanus:
					seen[req.Role]++
					if req.Structured == nil || len(req.Tools) != 0 {
						t.Fatalf("JANUS request structured %v, %d tools; want native, no tools", req.Structured, len(req.Tools))
					}
				}
			}
			if seen[hippocam.CallPrecip] == 0 || seen[hippocam.CallJanus] == 0 {
				t.Fatalf("requests per role %v", seen)
			}
		})
	}
}
