package sim_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sim"
)

// anthropicServer serves m over HTTP for the tests of the Messages endpoint.
func anthropicServer(t *testing.T, m *sim.Model) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// postMessages sends body to base/v1/messages with the role header (none if role is "").
func postMessages(t *testing.T, base string, role hippocam.CallRole, body string) (int, []byte) {
	t.Helper()
	return postPath(t, base+"/v1/messages", role, body)
}

// postPath sends body to url with the role header (none if role is "").
func postPath(t *testing.T, url string, role hippocam.CallRole, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if role != "" {
		req.Header.Set(hippocam.RoleHeader, string(role))
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

// The one conversation of these tests, in both formats: a call, its result together with more
// user text, and directives in both that the simulated model answers.
// The system prompt is long enough for the prompt cache to serve a repeated request.
var anthSystem = strings.Repeat("You are the test agent; answer what the directives say. ", 120)

const (
	anthTurn1  = "!call lookup {\"id\":7}"
	anthResult = "!say found it"
	anthTurn2  = "!say and more\n!call lookup {\"id\":8}"
	anthTools  = `[{"name":"lookup","description":"Look a thing up","input_schema":{"type":"object","properties":{"id":{"type":"integer"}}}}]`
)

func anthropicBody(stream bool) string {
	return `{"model":"claude-sim","max_tokens":500,"stream":` + map[bool]string{true: "true", false: "false"}[stream] +
		`,"system":[{"type":"text","text":` + jsonString(anthSystem) + `,"cache_control":{"type":"ephemeral"}}],` +
		`"tools":` + anthTools + `,"messages":[` +
		`{"role":"user","content":` + jsonString(anthTurn1) + `},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a","name":"lookup","input":{"id":7}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":` + jsonString(anthResult) + `},` +
		`{"type":"text","text":` + jsonString(anthTurn2) + `}]}]}`
}

func chatBody() string {
	return `{"model":"claude-sim","max_tokens":500,"messages":[` +
		`{"role":"system","content":` + jsonString(anthSystem) + `},` +
		`{"role":"user","content":` + jsonString(anthTurn1) + `},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"toolu_a","type":"function","function":{"name":"lookup","arguments":"{\"id\":7}"}}]},` +
		`{"role":"tool","tool_call_id":"toolu_a","content":` + jsonString(anthResult) + `},` +
		`{"role":"user","content":` + jsonString(anthTurn2) + `}],` +
		`"tools":[{"type":"function","function":{"name":"lookup","description":"Look a thing up","parameters":{"type":"object","properties":{"id":{"type":"integer"}}}}}]}`
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestHTTPMessagesSameAsChat(t *testing.T) {
	chatBase := anthropicServer(t, mustModel(t))
	anthBase := anthropicServer(t, mustModel(t))
	for i := 0; i < 2; i++ { // the second round is served from the prompt cache
		status, cb := postPath(t, chatBase+"/v1/chat/completions", "", chatBody())
		if status != 200 {
			t.Fatalf("chat: %d %s", status, cb)
		}
		var chat wire.ChatResponse
		if err := json.Unmarshal(cb, &chat); err != nil {
			t.Fatal(err)
		}
		status, ab := postMessages(t, anthBase, "", anthropicBody(false))
		if status != 200 {
			t.Fatalf("messages: %d %s", status, ab)
		}
		var msg anthropic.Response
		if err := json.Unmarshal(ab, &msg); err != nil {
			t.Fatal(err)
		}
		wantText, _ := chat.Choices[0].Message.Text()
		var text []string
		var calls, wantCalls [][2]string
		for _, b := range msg.Content {
			switch b.Type {
			case anthropic.BlockText:
				text = append(text, b.Text)
			case anthropic.BlockToolUse:
				calls = append(calls, [2]string{b.Name, string(b.Input)})
			default:
				t.Errorf("unexpected block %s", b.Type)
			}
		}
		for _, c := range chat.Choices[0].Message.ToolCalls {
			wantCalls = append(wantCalls, [2]string{c.Function.Name, c.Function.Arguments})
		}
		if strings.Join(text, "") != wantText || wantText != "found it\nand more" {
			t.Errorf("text %q, chat text %q", text, wantText)
		}
		if len(calls) != 1 || calls[0] != wantCalls[0] || len(wantCalls) != 1 {
			t.Errorf("calls %v, chat calls %v", calls, wantCalls)
		}
		if *msg.StopReason != "tool_use" || chat.Choices[0].FinishReason != "tool_calls" {
			t.Errorf("stop %q, chat finish %q", *msg.StopReason, chat.Choices[0].FinishReason)
		}
		u, cu := msg.Usage, chat.Usage
		if u.InputTokens+u.CacheReadInputTokens != cu.PromptTokens || u.CacheReadInputTokens != cu.PromptTokensDetails.CachedTokens ||
			u.OutputTokens != cu.CompletionTokens || u.CacheCreationInputTokens != 0 {
			t.Errorf("round %d: usage %+v, chat usage %+v", i, u, cu)
		}
		if i == 1 && u.CacheReadInputTokens == 0 {
			t.Error("the repeated request read nothing from the prompt cache")
		}
		if !strings.HasPrefix(msg.ID, "msg_") || msg.Model != "claude-sim" || msg.Type != "message" || msg.Role != "assistant" {
			t.Errorf("header fields %+v", msg)
		}
	}
}

func TestHTTPMessagesStream(t *testing.T) {
	base := anthropicServer(t, mustModel(t))
	status, plain := postMessages(t, base, "", anthropicBody(false))
	if status != 200 {
		t.Fatalf("%d %s", status, plain)
	}
	var whole anthropic.Response
	if err := json.Unmarshal(plain, &whole); err != nil {
		t.Fatal(err)
	}
	status, streamed := postMessages(t, base, "", anthropicBody(true))
	if status != 200 {
		t.Fatalf("%d %s", status, streamed)
	}
	// Reassemble the stream by its events.
	var id, text, stop string
	var calls []hippocam.ToolCall
	var args strings.Builder
	events := strings.Split(strings.TrimSuffix(string(streamed), "\n\n"), "\n\n")
	for _, chunk := range events {
		name, data, ok := strings.Cut(chunk, "\n")
		if !ok || !strings.HasPrefix(name, "event: ") || !strings.HasPrefix(data, "data: ") {
			t.Fatalf("malformed event %q", chunk)
		}
		var ev anthropic.Event
		if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != strings.TrimPrefix(name, "event: ") {
			t.Fatalf("event %s has type %s", name, ev.Type)
		}
		switch ev.Type {
		case anthropic.EventMessageStart:
			id = ev.Message.ID
		case anthropic.EventContentBlockStart:
			if ev.ContentBlock.Type == anthropic.BlockToolUse {
				calls = append(calls, hippocam.ToolCall{ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name})
				args.Reset()
			}
		case anthropic.EventContentBlockDelta:
			text += ev.Delta.Text
			args.WriteString(ev.Delta.PartialJSON)
			if len(calls) > 0 {
				calls[len(calls)-1].Arguments = args.String()
			}
		case anthropic.EventMessageDelta:
			stop = *ev.Delta.StopReason
		}
	}
	if last := events[len(events)-1]; !strings.HasPrefix(last, "event: message_stop") {
		t.Errorf("last event %q", last)
	}
	if id != whole.ID {
		t.Errorf("streamed id %s, plain id %s", id, whole.ID)
	}
	if text != whole.Content[0].Text || stop != *whole.StopReason {
		t.Errorf("streamed %q %s, plain %q %s", text, stop, whole.Content[0].Text, *whole.StopReason)
	}
	wc := whole.Content[1]
	if len(calls) != 1 || calls[0] != (hippocam.ToolCall{ID: wc.ID, Name: wc.Name, Arguments: string(wc.Input)}) {
		t.Errorf("streamed calls %+v, plain %+v", calls, wc)
	}
}

// TestHTTPMessagesClient drives the endpoint with the package's own client, plain and streamed.
func TestHTTPMessagesClient(t *testing.T) {
	base := anthropicServer(t, mustModel(t))
	c, err := anthropic.New(anthropic.Config{BaseURL: base, Model: "claude-sim"})
	if err != nil {
		t.Fatal(err)
	}
	req := &hippocam.Request{
		Messages: []hippocam.Message{
			{Role: hippocam.RoleSystem, Content: anthSystem},
			{Role: hippocam.RoleUser, Content: anthTurn1},
			{Role: hippocam.RoleAssistant, ToolCalls: []hippocam.ToolCall{{ID: "toolu_a", Name: "lookup", Arguments: `{"id":7}`}}},
			{Role: hippocam.RoleTool, ToolCallID: "toolu_a", Content: anthResult},
			{Role: hippocam.RoleUser, Content: anthTurn2},
		},
		Tools: []hippocam.Tool{{Name: "lookup", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "found it\nand more" || resp.FinishReason != "tool_calls" || len(resp.Message.ToolCalls) != 1 {
		t.Errorf("answer %+v", resp)
	}
	var pieces strings.Builder
	sresp, err := c.Stream(context.Background(), req, func(s string) { pieces.WriteString(s) })
	if err != nil {
		t.Fatal(err)
	}
	if pieces.String() != resp.Message.Content || sresp.Message.Content != resp.Message.Content ||
		sresp.Message.ToolCalls[0] != resp.Message.ToolCalls[0] {
		t.Errorf("streamed %+v, plain %+v", sresp.Message, resp.Message)
	}
	if sresp.Usage.Input != resp.Usage.Input || sresp.Usage.CachedInput == 0 {
		t.Errorf("streamed usage %+v, plain %+v", sresp.Usage, resp.Usage)
	}
}

func TestHTTPMessagesErrors(t *testing.T) {
	base := anthropicServer(t, mustModel(t))
	for _, c := range []struct {
		name   string
		role   hippocam.CallRole
		body   string
		status int
		want   string
	}{
		{"NotJSON", "", `{`, 400, "not a JSON object"},
		{"NoMaxTokens", "", `{"messages":[{"role":"user","content":"x"}]}`, 400, "max_tokens"},
		{"UnknownBlock", "", `{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"nonsense"}]}]}`, 400, `messages[0].content[0]: unknown content block type "nonsense"`},
		{"UnknownRole", "oracle", `{"max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, 400, "unknown call role"},
		{"ComponentWithoutInstruction", hippocam.CallJanus, `{"max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}]}`, 400, "janus"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, b := postMessages(t, base, c.role, c.body)
			var e anthropic.ErrorResponse
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("body %s: %v", b, err)
			}
			if status != c.status || e.Type != "error" || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, c.want) {
				t.Errorf("%d %s", status, b)
			}
		})
	}
}

// A system turn in the middle of "messages", sent with the beta header that allows it, is
// answered like the same conversation with that system message in a chat request.
func TestHTTPMessagesMidConversationSystem(t *testing.T) {
	base := anthropicServer(t, mustModel(t))
	body := `{"model":"claude-sim","max_tokens":100,"system":"Top.","messages":[` +
		`{"role":"user","content":"!say one"},{"role":"assistant","content":"one"},` +
		`{"role":"user","content":"!say two"},{"role":"system","content":[{"type":"text","text":"Plan mode."}]}]}`
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Anthropic-Beta", "claude-code-20250219,"+anthropic.BetaMidConversationSystem)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg anthropic.Response
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(b, &msg) != nil || len(msg.Content) != 1 || msg.Content[0].Text != "two" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}
