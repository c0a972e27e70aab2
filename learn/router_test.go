package learn_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// scripted is a model that gives the answers it holds in turn and keeps the requests.
type scripted struct {
	mu       sync.Mutex
	answers  []string
	requests []*hippocam.Request
}

func (s *scripted) Complete(_ context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	if len(s.answers) == 0 {
		return nil, hippocam.Errorf(hippocam.EUNAVAILABLE, "the script has no answer left")
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	return &hippocam.Response{Message: hippocam.Message{Role: hippocam.RoleAssistant, Content: a}}, nil
}

// system is a memory system that only has a name and a description: all the router sees.
type system struct{ name, description string }

func (s system) Name() string        { return s.name }
func (s system) Description() string { return s.description }
func (system) Read(context.Context, json.RawMessage, *hippocam.Task, int) (hippocam.Advisory, error) {
	return hippocam.Advisory{}, nil
}
func (system) Update(_ context.Context, state json.RawMessage, _ []hippocam.Trajectory) (json.RawMessage, error) {
	return state, nil
}
func (system) Entries(json.RawMessage) int { return 0 }

var library = []hippocam.MemorySystem{
	system{"icl", "keeps earlier tasks verbatim"},
	system{"reasoning_bank", "keeps short strategies"},
	system{"hippocam", "keeps consolidated experience"},
}

func task(text string) *hippocam.Task {
	return &hippocam.Task{ID: "t1", Key: "secret-key", Messages: []hippocam.Message{
		{Role: hippocam.RoleSystem, Content: "You are a careful analyst."},
		{Role: hippocam.RoleUser, Content: text},
	}}
}

var clusters = []hippocam.Cluster{
	{ID: "c1", System: "icl", Description: "Sales report", Trajectories: 3, State: json.RawMessage(`{"secret":"state"}`)},
	{ID: "c2", System: "hippocam", Description: "Shipping audit", Trajectories: 1},
}

func TestRouteScripted(t *testing.T) {
	tests := []struct {
		name    string
		answers []string
		want    learn.Decision
		calls   int
		problem string // in the last repair instruction
	}{
		{name: "Reuse", answers: []string{`{"action":"reuse","cluster":"c2","reason":"same audit"}`}, want: learn.Decision{Cluster: "c2", Reason: "same audit"}, calls: 1},
		{name: "Create", answers: []string{"```json\n" + `{"action":"create","system":"icl","scope":"  weekly sales reports ","reason":"new family"}` + "\n```"},
			want: learn.Decision{System: "icl", Scope: "weekly sales reports", Reason: "new family"}, calls: 1},
		{name: "NullsForUnusedFields", answers: []string{`{"action":"reuse","cluster":"c1","system":null,"scope":null,"reason":"r"}`}, want: learn.Decision{Cluster: "c1", Reason: "r"}, calls: 1},
		{name: "UnknownClusterRepaired", answers: []string{`{"action":"reuse","cluster":"c9","reason":"r"}`, `{"action":"reuse","cluster":"c1","reason":"r"}`},
			want: learn.Decision{Cluster: "c1", Reason: "r"}, calls: 2, problem: `there is no cluster "c9"`},
		{name: "UnofferedSystemRepaired", answers: []string{`{"action":"create","system":"lessons","scope":"s","reason":"r"}`, `{"action":"create","system":"hippocam","scope":"s","reason":"r"}`},
			want: learn.Decision{System: "hippocam", Scope: "s", Reason: "r"}, calls: 2, problem: `system "lessons" is not offered`},
		{name: "EmptyScopeRepaired", answers: []string{`{"action":"create","system":"icl","scope":" ","reason":"r"}`, `{"action":"create","system":"icl","scope":"s","reason":"r"}`},
			want: learn.Decision{System: "icl", Scope: "s", Reason: "r"}, calls: 2, problem: "needs a scope"},
		{name: "UnknownFieldRepaired", answers: []string{`{"action":"reuse","cluster":"c1","confidence":0.9}`, `{"action":"reuse","cluster":"c1","reason":"r"}`},
			want: learn.Decision{Cluster: "c1", Reason: "r"}, calls: 2, problem: "unknown field"},
		{name: "NoJSONRepaired", answers: []string{"I would reuse c1.", `{"action":"reuse","cluster":"c1","reason":"r"}`},
			want: learn.Decision{Cluster: "c1", Reason: "r"}, calls: 2, problem: "no JSON object"},
		{name: "UnknownActionRepaired", answers: []string{`{"action":"merge","cluster":"c1","reason":"r"}`, `{"action":"reuse","cluster":"c1","reason":"r"}`},
			want: learn.Decision{Cluster: "c1", Reason: "r"}, calls: 2, problem: `action is "merge"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &scripted{answers: tt.answers}
			d, err := learn.Route(context.Background(), &learn.Env{Model: m}, task("Sales report\ndecide k: a | b"), library, clusters)
			if err != nil {
				t.Fatalf("Route: %v", err)
			}
			if d != tt.want {
				t.Errorf("decision %+v, want %+v", d, tt.want)
			}
			if len(m.requests) != tt.calls {
				t.Fatalf("%d calls, want %d", len(m.requests), tt.calls)
			}
			for _, req := range m.requests {
				if req.Role != hippocam.CallRouter {
					t.Errorf("role %q, want router", req.Role)
				}
			}
			if tt.problem != "" {
				last := m.requests[len(m.requests)-1].Messages[1].Content
				if !strings.Contains(last, tt.problem) {
					t.Errorf("repair instruction does not say %q:\n%s", tt.problem, last)
				}
			}
		})
	}
}

func TestRouteGivesUp(t *testing.T) {
	bad := `{"action":"reuse","cluster":"nope","reason":"r"}`
	m := &scripted{answers: []string{bad, bad, bad, bad, bad}}
	_, err := learn.Route(context.Background(), &learn.Env{Model: m, Corrections: 2}, task("Sales report"), library, clusters)
	if !errors.Is(err, learn.ErrGaveUp) {
		t.Fatalf("error %v, want one wrapping ErrGaveUp", err)
	}
	if len(m.requests) != 3 {
		t.Errorf("%d calls, want 3 (one and two repairs)", len(m.requests))
	}
	t.Run("ModelErrorIsNotGivingUp", func(t *testing.T) {
		_, err := learn.Route(context.Background(), &learn.Env{Model: &scripted{}}, task("x"), library, clusters)
		if err == nil || errors.Is(err, learn.ErrGaveUp) || hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE {
			t.Errorf("error %v, want the model's EUNAVAILABLE", err)
		}
	})
	t.Run("NothingToChoose", func(t *testing.T) {
		m := &scripted{}
		_, err := learn.Route(context.Background(), &learn.Env{Model: m}, task("x"), nil, nil)
		if hippocam.ErrorCode(err) != hippocam.EINVALID || len(m.requests) != 0 {
			t.Errorf("error %v after %d calls, want EINVALID and no call", err, len(m.requests))
		}
	})
}

// TestRouteInput checks that the router sees the task's specification, the systems and the
// clusters' summaries, and nothing else: no task id or key, no cluster state.
func TestRouteInput(t *testing.T) {
	m := &scripted{answers: []string{`{"action":"reuse","cluster":"c1","reason":"r"}`}}
	tk := task("Sales report\ntags: weekly")
	tk.Tools = []hippocam.Tool{{Name: "run_sql", Description: "runs a query", Parameters: json.RawMessage(`{"type":"object","properties":{"hidden_param":{}}}`)}}
	if _, err := learn.Route(context.Background(), &learn.Env{Model: m}, tk, library, clusters); err != nil {
		t.Fatal(err)
	}
	instruction := m.requests[0].Messages[1].Content
	_, body, ok := strings.Cut(instruction, learn.RouterInputMarker)
	if !ok {
		t.Fatalf("no input marker in %q", instruction)
	}
	var in learn.RouterInput
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		t.Fatalf("input: %v", err)
	}
	want := learn.RouterInput{
		Task: learn.RouterTask{
			Messages: []learn.RouterMessage{{Role: "system", Content: "You are a careful analyst."}, {Role: "user", Content: "Sales report\ntags: weekly"}},
			Tools:    []learn.RouterTool{{Name: "run_sql", Description: "runs a query"}},
		},
		Systems: []learn.RouterSystem{{ID: "icl", Description: "keeps earlier tasks verbatim"}, {ID: "reasoning_bank", Description: "keeps short strategies"}, {ID: "hippocam", Description: "keeps consolidated experience"}},
		Clusters: []learn.RouterCluster{{ID: "c1", System: "icl", Description: "Sales report", Trajectories: 3},
			{ID: "c2", System: "hippocam", Description: "Shipping audit", Trajectories: 1}},
	}
	got, _ := json.Marshal(in)
	wantJSON, _ := json.Marshal(want)
	if string(got) != string(wantJSON) {
		t.Errorf("input\n%s\nwant\n%s", got, wantJSON)
	}
	for _, leak := range []string{"secret", "t1", "hidden_param"} {
		if strings.Contains(m.requests[0].Messages[0].Content+instruction, leak) {
			t.Errorf("the router request shows %q", leak)
		}
	}
}

func TestRouteSim(t *testing.T) {
	env := &learn.Env{Model: sim.New(tokenizer.MustDefault()).InProcess()}
	only := func(ids ...string) []hippocam.MemorySystem {
		var out []hippocam.MemorySystem
		for _, id := range ids {
			out = append(out, system{id, "the " + id + " system"})
		}
		return out
	}
	tests := []struct {
		name     string
		text     string
		systems  []hippocam.MemorySystem
		clusters []hippocam.Cluster
		want     learn.Decision
	}{
		{name: "DirectiveCreates", text: "Sales report\n#route lessons | Weekly sales", systems: only("icl", "lessons"),
			clusters: clusters, want: learn.Decision{System: "lessons", Scope: "Weekly sales"}},
		{name: "DirectiveReusesIgnoringCase", text: "Sales report\n#route icl |  sales REPORT ", systems: only("icl", "hippocam"),
			clusters: clusters, want: learn.Decision{Cluster: "c1"}},
		{name: "DirectiveNeedsSameSystem", text: "Shipping audit\n#route icl | Shipping audit", systems: only("icl"),
			clusters: clusters, want: learn.Decision{System: "icl", Scope: "Shipping audit"}},
		{name: "DirectiveForUnofferedSystemIgnored", text: "Shipping audit\n#route lessons | x", systems: only("icl"),
			clusters: clusters, want: learn.Decision{Cluster: "c2"}},
		{name: "TitleReusesAnySystem", text: "tags: a\n!say hi\nShipping audit\ndecide k: a | b", systems: only("icl"),
			clusters: clusters, want: learn.Decision{Cluster: "c2"}},
		{name: "DetailPrefersICL", text: "Ledger check\ndetail owner := Dana\ndecide k: a | b", systems: only("hippocam", "icl"),
			want: learn.Decision{System: "icl", Scope: "Ledger check"}},
		{name: "DecidePrefersHippocam", text: "Ledger check\ndecide k: a | b", systems: only("icl", "hippocam"),
			want: learn.Decision{System: "hippocam", Scope: "Ledger check"}},
		{name: "AskPrefersHippocam", text: "Ledger check\n!ask owner", systems: only("icl", "hippocam"),
			want: learn.Decision{System: "hippocam", Scope: "Ledger check"}},
		{name: "FactPrefersHippocam", text: "budget := 4\nLedger check", systems: only("icl", "hippocam"),
			want: learn.Decision{System: "hippocam", Scope: "Ledger check"}},
		{name: "PlainPrefersICL", text: "Ledger check\nPlease look.", systems: only("hippocam", "icl"),
			want: learn.Decision{System: "icl", Scope: "Ledger check"}},
		{name: "FirstOfferedOtherwise", text: "Ledger check\ndecide k: a | b", systems: only("reasoning_bank", "lessons"),
			want: learn.Decision{System: "reasoning_bank", Scope: "Ledger check"}},
		{name: "ListMarkedTitle", text: "- Ledger check", systems: only("icl"), want: learn.Decision{System: "icl", Scope: "Ledger check"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := learn.Route(context.Background(), env, task(tt.text), tt.systems, tt.clusters)
			if err != nil {
				t.Fatalf("Route: %v", err)
			}
			d.Reason = ""
			if d != tt.want {
				t.Errorf("decision %+v, want %+v", d, tt.want)
			}
		})
	}
	t.Run("GivesUpWithoutSystems", func(t *testing.T) {
		// Nothing matches the title and no system is offered: the simulation's answer cannot
		// pass the validator, however often it is asked.
		_, err := learn.Route(context.Background(), env, task("Unknown work"), nil, clusters)
		if !errors.Is(err, learn.ErrGaveUp) {
			t.Errorf("error %v, want ErrGaveUp", err)
		}
	})
}
