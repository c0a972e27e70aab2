package httpapi_test

import (
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
)

// listed is one session of GET /api/sessions as the viewer reads it.
type listed struct {
	ID       string           `json:"id"`
	Title    string           `json:"title"`
	Kind     string           `json:"kind"`
	Group    string           `json:"group"`
	Parent   string           `json:"parent"`
	Messages int              `json:"messages"`
	Client   *hippocam.Client `json:"client"`
}

func listSessions(t *testing.T, s *testServer, query string) map[string]listed {
	t.Helper()
	r := s.do(t, "GET", "/api/sessions"+query, "", "", nil)
	if r.status != 200 {
		t.Fatalf("GET /api/sessions%s: %d %s", query, r.status, r.body)
	}
	var out struct {
		Sessions []listed `json:"sessions"`
	}
	r.json(t, &out)
	m := map[string]listed{}
	for _, in := range out.Sessions {
		m[in.ID] = in
	}
	return m
}

// post sends a request the way a real client would and returns the session that answered.
func post(t *testing.T, s *testServer, path, body string, header ...string) string {
	t.Helper()
	r := s.do(t, "POST", path, "", "", []byte(body), header...)
	if r.status != 200 {
		t.Fatalf("POST %s: %d %s", path, r.status, r.body)
	}
	return r.header.Get("Hippocam-Session")
}

// What the clients say of their conversations reaches the session listing: Claude Code's
// session, its session namer and its subagents; opencode's title request; Codex's threads. Each
// session is titled by its first user line and placed in its conversation.
func TestClientConversations(t *testing.T) {
	s := newServer(t, 8000, nil)
	const ccSession = "5f0c2c8e-6f1b-4c7e-9d0a-2b1e7c3d4a5f"
	userID := `"{\"device_id\":\"d1\",\"account_uuid\":\"\",\"session_id\":\"` + ccSession + `\"}"`
	ccMain := post(t, s, "/v1/messages", `{"model":"claude-x","max_tokens":256,"system":"You are Claude Code.","metadata":{"user_id":`+userID+`},`+
		`"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>be careful</system-reminder>"},{"type":"text","text":"Why does the build fail on arm64?\n!say Because."}]}]}`,
		"X-Claude-Code-Session-Id", ccSession)
	// An older Claude Code names its session only in metadata.user_id.
	ccTitle := post(t, s, "/v1/messages", `{"model":"claude-haiku","max_tokens":64,"system":[{"type":"text","text":"You are naming a coding session so the user can pick it out."}],`+
		`"metadata":{"user_id":"user_ab12_account_cd34_session_`+ccSession+`"},`+
		`"messages":[{"role":"user","content":"<session>\nWhy does the build fail on arm64?\n</session>\n\nWrite the title in English.\n!say Build on arm64"}]}`)
	ccSub := post(t, s, "/v1/messages", `{"model":"claude-x","max_tokens":256,"system":"You are an agent for Claude Code.","metadata":{"user_id":`+userID+`},`+
		`"messages":[{"role":"user","content":"Find the build scripts\n!say Found."}]}`,
		"X-Claude-Code-Session-Id", ccSession, "X-Claude-Code-Agent-Id", "agent-a1")
	ocMain := post(t, s, "/v1/chat/completions", `{"model":"m","messages":[{"role":"system","content":"You are opencode."},{"role":"user","content":"Rename the --verbose flag\n!say Renamed."}]}`,
		"User-Agent", "opencode/1.0")
	ocTitle := post(t, s, "/v1/chat/completions", `{"model":"small","messages":[{"role":"system","content":"You are a title generator. You output ONLY a thread title."},`+
		`{"role":"user","content":"Generate a title for this conversation:\n"},{"role":"user","content":"Rename the --verbose flag\n!say Flag rename"}]}`)
	cxMain := post(t, s, "/v1/responses", `{"model":"m","instructions":"You are Codex.","input":"Add a --dry-run flag\n!say Added.","prompt_cache_key":"019a-conv"}`,
		"Session_id", "019a-conv", "Thread-Id", "019a-conv")
	cxChild := post(t, s, "/v1/responses", `{"model":"m","instructions":"You are Codex.","input":"Write the tests for --dry-run\n!say Written."}`,
		"Session-Id", "019a-conv", "Thread-Id", "019a-child", "X-Codex-Parent-Thread-Id", "019a-conv", "X-OpenAI-Subagent", "collab_spawn")

	got := listSessions(t, s, "")
	want := map[string]listed{
		ccMain:  {Title: "Why does the build fail on arm64?", Group: ccSession},
		ccTitle: {Title: "Why does the build fail on arm64?", Kind: hippocam.ClientTitle, Group: ccSession, Parent: ccMain},
		ccSub:   {Title: "Find the build scripts", Kind: hippocam.ClientSubagent, Group: ccSession, Parent: ccMain},
		ocMain:  {Title: "Rename the --verbose flag", Group: ocMain},
		ocTitle: {Title: "Rename the --verbose flag", Kind: hippocam.ClientTitle, Group: ocMain, Parent: ocMain},
		cxMain:  {Title: "Add a --dry-run flag", Group: "019a-conv"},
		cxChild: {Title: "Write the tests for --dry-run", Kind: hippocam.ClientSubagent, Group: "019a-conv", Parent: cxMain},
	}
	if len(got) != len(want) {
		t.Fatalf("%d sessions listed, want %d: %+v", len(got), len(want), got)
	}
	for id, w := range want {
		g := got[id]
		if g.Title != w.Title || g.Kind != w.Kind || g.Group != w.Group || g.Parent != w.Parent {
			t.Errorf("%s: title %q kind %q group %q parent %q; want %q %q %q %q", id, g.Title, g.Kind, g.Group, g.Parent,
				w.Title, w.Kind, w.Group, w.Parent)
		}
	}
	if c := got[ccSub].Client; c == nil || c.Agent != "agent-a1" {
		t.Errorf("subagent's client = %+v, want agent id agent-a1", c)
	}

	// ?group= lists one conversation.
	one := listSessions(t, s, "?group="+ccSession)
	if len(one) != 3 || one[ccMain].ID == "" || one[ccTitle].ID == "" || one[ccSub].ID == "" {
		t.Errorf("group %s lists %+v, want its three sessions", ccSession, one)
	}
	if none := listSessions(t, s, "?group=nothing"); len(none) != 0 {
		t.Errorf("an unknown group lists %+v", none)
	}

	// A session's page shows the same.
	var detail struct {
		Title  string `json:"title"`
		Kind   string `json:"kind"`
		Group  string `json:"group"`
		Parent string `json:"parent"`
	}
	s.do(t, "GET", "/api/sessions/"+ccSub, "", "", nil).json(t, &detail)
	if detail.Title != "Find the build scripts" || detail.Kind != hippocam.ClientSubagent || detail.Group != ccSession || detail.Parent != ccMain {
		t.Errorf("session page of the subagent: %+v", detail)
	}
}

// The context meter of a session's page counts what its last main request carried: the agent's
// framing and tools as well as Hippocam's system prompt, recall tools, memory and messages,
// adding up to the request's size, with the input the upstream reported beside it.
func TestSessionRequestSize(t *testing.T) {
	s := newServer(t, 8000, nil)
	framing := "You are a coding agent. " + strings.Repeat("Follow the project's conventions. ", 40)
	tools := `"tools":[{"type":"function","function":{"name":"read_file","description":"Reads a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}]`
	id := post(t, s, "/v1/chat/completions", `{"model":"m","messages":[{"role":"system","content":"`+framing+`"},{"role":"user","content":"hello\n!say hi"}],`+tools+`}`)
	var detail struct {
		Framing []struct {
			Tokens int `json:"tokens"`
		} `json:"framing"`
		ContextTokens int                   `json:"context_tokens"`
		Request       *hippocam.RequestSize `json:"request"`
		Usage         map[string]struct {
			Input int `json:"input"`
		} `json:"usage"`
	}
	s.do(t, "GET", "/api/sessions/"+id, "", "", nil).json(t, &detail)
	r := detail.Request
	if r == nil {
		t.Fatal("the session page has no request size")
	}
	if sum := r.Framing + r.System + r.Tools + r.RecallTools + r.Memory + r.Messages; sum != r.Total {
		t.Errorf("parts add up to %d, total %d: %+v", sum, r.Total, *r)
	}
	if r.Framing < 200 || r.Tools == 0 || r.RecallTools == 0 || r.System == 0 || r.Messages == 0 {
		t.Errorf("request size %+v: framing, tools, Hippocam's prompt and tools, and messages all count", *r)
	}
	// The framing card counts the framing as the meter does.
	if len(detail.Framing) != 1 || detail.Framing[0].Tokens != r.Framing {
		t.Errorf("framing %+v, want one message of %d tokens", detail.Framing, r.Framing)
	}
	if r.Total <= detail.ContextTokens+r.Framing {
		t.Errorf("total %d must exceed the context (%d) and framing (%d)", r.Total, detail.ContextTokens, r.Framing)
	}
	// One main call: what the upstream reported is the session's main input.
	if agent := detail.Usage[string(hippocam.CallAgent)]; r.Reported == 0 || r.Reported != agent.Input {
		t.Errorf("reported input %d, the main calls' input %d", r.Reported, agent.Input)
	}
}
