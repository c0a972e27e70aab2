package anthropic_test

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
)

// Pieces of the request below, with odd white space, so that the test can check that Origin
// keeps them byte for byte.
const (
	rawSystem    = "[ {\"type\":\"text\", \"text\":\"You are terse.\"},\n\t{\"type\":\"text\",\"text\":\"Use tools.\",\"cache_control\":{\"type\":\"ephemeral\"}} ]"
	rawUser1     = "{ \"role\" : \"user\",\n \"content\":\"Hi \\u00e9 there\" }"
	rawThinking  = "{\"type\":\"thinking\",\"thinking\":\"let me see\",\"signature\":\"sig==\"}"
	rawAssistant = "{\"role\":\"assistant\",\"content\":[" + rawThinking + ",\n {\"type\":\"text\",\"text\":\"Looking.\"}, {\"type\":\"text\",\"text\":\"Twice.\"},\n" +
		" {\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"lookup\",\"input\": { \"q\" : \"x\",\n \"n\":1 }},\n" +
		" {\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"shot\",\"input\":{}} ]}"
	rawResult1 = "{\"type\":\"tool_result\", \"tool_use_id\":\"toolu_1\", \"content\":\"found: 3\"}"
	rawImage   = "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"iVBORw0KGgo=\"}}"
	rawResult2 = "{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_2\",\"is_error\":true,\"content\":[{\"type\":\"text\",\"text\":\"no camera\"}, " + rawImage + "]}"
	rawText    = "{\"type\":\"text\",\"text\":\"Now this:\"}"
	rawDoc     = "{\"type\":\"document\",\"title\":\"Spec\",\"source\":{\"type\":\"url\",\"url\":\"https://example.com/a.pdf\"},\"cache_control\":{\"type\":\"ephemeral\"}}"
	rawDocText = "{\"type\":\"document\",\"source\":{\"type\":\"text\",\"media_type\":\"text/plain\",\"data\":\"plain words\"}}"
	rawUser2   = "{\"role\":\"user\",\"content\":[ " + rawResult1 + ",\n" + rawResult2 + ", " + rawText + ",\n  " + rawDoc + "," + rawDocText + "]}"
	rawTools   = "[{\"name\":\"lookup\",\"description\":\"Look up\",\"input_schema\":{ \"type\":\"object\" }},{\"name\":\"shot\",\"input_schema\":{\"type\":\"object\"},\"cache_control\":{\"type\":\"ephemeral\"}}]"
	fullBody   = "{\"model\":\"claude-x\", \"max_tokens\": 100, \"system\": " + rawSystem + ",\n\"messages\": [" + rawUser1 + ",\n" + rawAssistant + ",  " + rawUser2 + "],\n" +
		"\"tools\":" + rawTools + ",\"tool_choice\":{\"type\":\"any\",\"disable_parallel_tool_use\":true},\"stream\":true," +
		"\"temperature\":0.50,\"top_k\":5,\"stop_sequences\":[\"END\"],\"metadata\":{\"user_id\":\"u1\"},\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024},\"container\": \"c-1\"}"
)

func TestReadRequest(t *testing.T) {
	conv, err := anthropic.ReadRequest([]byte(fullBody))
	if err != nil {
		t.Fatal(err)
	}
	if conv.Format != hippocam.FormatAnthropic || !conv.Store || !conv.Stream || conv.Model != "claude-x" || conv.MaxTokens != 100 {
		t.Errorf("header fields: %+v", conv)
	}
	origin := func(raw string) *hippocam.Origin {
		return &hippocam.Origin{Format: hippocam.FormatAnthropic, Raw: raw}
	}
	wantFraming := []hippocam.Message{{Role: hippocam.RoleSystem, Kind: hippocam.KindRaw, Content: "You are terse.\nUse tools.", Origin: origin(rawSystem)}}
	if !reflect.DeepEqual(conv.Framing, wantFraming) {
		t.Errorf("framing:\n got %+v\nwant %+v", conv.Framing, wantFraming)
	}
	anth := hippocam.FormatAnthropic
	want := []hippocam.Message{
		{Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: "Hi é there", Origin: origin(rawUser1)},
		{Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw, Content: "Looking.\nTwice.",
			ToolCalls: []hippocam.ToolCall{
				{ID: "toolu_1", Name: "lookup", Arguments: "{ \"q\" : \"x\",\n \"n\":1 }"},
				{ID: "toolu_2", Name: "shot", Arguments: "{}"},
			},
			Parts:  []hippocam.Part{{Type: "thinking", Format: anth, Raw: rawThinking}},
			Origin: origin(rawAssistant)},
		{Role: hippocam.RoleTool, Kind: hippocam.KindRaw, ToolCallID: "toolu_1", Content: "found: 3", Origin: origin(rawUser2)},
		{Role: hippocam.RoleTool, Kind: hippocam.KindRaw, ToolCallID: "toolu_2", Content: "no camera",
			Parts: []hippocam.Part{
				{Type: hippocam.PartImage, MediaType: "image/png", Data: "iVBORw0KGgo=", Format: anth, Raw: rawImage},
				{Type: anthropic.PartToolError, Format: anth},
			},
			Origin: origin(rawResult2)},
		{Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: "Now this:",
			Parts: []hippocam.Part{
				{Type: hippocam.PartFile, Name: "Spec", URL: "https://example.com/a.pdf", Format: anth, Raw: rawDoc},
				{Type: hippocam.PartFile, MediaType: "text/plain", Data: base64.StdEncoding.EncodeToString([]byte("plain words")), Format: anth, Raw: rawDocText},
			},
			Origin: origin("[" + rawText + "," + rawDoc + "," + rawDocText + "]")},
	}
	if len(conv.Messages) != len(want) {
		t.Fatalf("got %d messages, want %d: %+v", len(conv.Messages), len(want), conv.Messages)
	}
	for i := range want {
		if !reflect.DeepEqual(conv.Messages[i], want[i]) {
			t.Errorf("message %d:\n got %+v\nwant %+v", i, conv.Messages[i], want[i])
		}
	}
	wantTools := []hippocam.Tool{
		{Name: "lookup", Description: "Look up", Parameters: json.RawMessage(`{ "type":"object" }`)},
		{Name: "shot", Parameters: json.RawMessage(`{"type":"object"}`)},
	}
	if !reflect.DeepEqual(conv.Tools, wantTools) {
		t.Errorf("tools:\n got %s\nwant %s", mustMarshal(t, conv.Tools), mustMarshal(t, wantTools))
	}
	if conv.ToolChoice != "required" {
		t.Errorf("tool choice %q, want required", conv.ToolChoice)
	}
	wantExtra := `{"container":"c-1","disable_parallel_tool_use":true,"metadata":{"user_id":"u1"},"stop_sequences":["END"],"temperature":0.50,"thinking":{"type":"enabled","budget_tokens":1024},"top_k":5}`
	if string(conv.Extra) != wantExtra {
		t.Errorf("extra:\n got %s\nwant %s", conv.Extra, wantExtra)
	}
}

// TestReadRequestOrigins checks that every message's Origin is a slice of the body as sent.
func TestReadRequestOrigins(t *testing.T) {
	conv, err := anthropic.ReadRequest([]byte(fullBody))
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{rawSystem, rawUser1, rawAssistant, rawUser2, rawResult2} {
		if !strings.Contains(fullBody, raw) {
			t.Fatalf("test data: %q is not in the body", raw)
		}
	}
	all := append(append([]hippocam.Message(nil), conv.Framing...), conv.Messages...)
	for i, m := range all {
		if m.Origin == nil || m.Origin.Format != hippocam.FormatAnthropic {
			t.Fatalf("message %d has origin %+v", i, m.Origin)
		}
		if i == len(all)-1 {
			continue // the JSON array of the remaining blocks
		}
		if !strings.Contains(fullBody, m.Origin.Raw) {
			t.Errorf("message %d: origin %q is not a slice of the body", i, m.Origin.Raw)
		}
	}
}

func TestReadRequestForms(t *testing.T) {
	t.Run("StringSystem", func(t *testing.T) {
		conv := mustRead(t, `{"max_tokens":1,"system":"Be kind.","messages":[{"role":"user","content":"x"}]}`)
		if len(conv.Framing) != 1 || conv.Framing[0].Content != "Be kind." || conv.Framing[0].Origin.Raw != `"Be kind."` {
			t.Errorf("framing %+v", conv.Framing)
		}
		if conv.Extra != nil || conv.Stream || conv.ToolChoice != "" {
			t.Errorf("conversation %+v", conv)
		}
	})
	t.Run("OnlyToolResults", func(t *testing.T) {
		conv := mustRead(t, `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"a"}]}]}`)
		if len(conv.Messages) != 1 || conv.Messages[0].Role != hippocam.RoleTool || conv.Messages[0].Content != "" {
			t.Errorf("messages %+v", conv.Messages)
		}
	})
	t.Run("EmptyBlocks", func(t *testing.T) {
		conv := mustRead(t, `{"max_tokens":1,"messages":[{"role":"user","content":[]}]}`)
		if len(conv.Messages) != 1 || conv.Messages[0].Role != hippocam.RoleUser {
			t.Errorf("messages %+v", conv.Messages)
		}
	})
	t.Run("ToolChoices", func(t *testing.T) {
		for tc, want := range map[string]string{
			`{"type":"auto"}`:             "auto",
			`{"type":"none"}`:             "none",
			`{"type":"tool","name":"go"}`: "go",
		} {
			conv := mustRead(t, `{"max_tokens":1,"tool_choice":`+tc+`,"messages":[{"role":"user","content":"x"}]}`)
			if conv.ToolChoice != want {
				t.Errorf("tool_choice %s: got %q, want %q", tc, conv.ToolChoice, want)
			}
		}
	})
	t.Run("SystemMessages", func(t *testing.T) {
		lead := `{"role":"system","content":"Lead."}`
		mid := `{"role":"system","content":[{"type":"text","text":"Plan"},{"type":"text","text":"mode."}]}`
		conv := mustRead(t, `{"max_tokens":1,"system":"Top.","messages":[`+lead+`,{"role":"user","content":"q"},`+mid+`,{"role":"user","content":"r"}]}`)
		if len(conv.Framing) != 2 || conv.Framing[1].Content != "Lead." || conv.Framing[1].Origin.Raw != lead {
			t.Errorf("framing %+v", conv.Framing)
		}
		if len(conv.Messages) != 3 {
			t.Fatalf("messages %+v", conv.Messages)
		}
		if m := conv.Messages[1]; m.Role != hippocam.RoleSystem || m.Kind != hippocam.KindRaw || m.Content != "Plan\nmode." || m.Origin.Raw != mid {
			t.Errorf("mid-conversation system message %+v", m)
		}
	})
	t.Run("OpaqueBlocks", func(t *testing.T) {
		raw := `{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go"}}`
		conv := mustRead(t, `{"max_tokens":1,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[`+raw+`,{"type":"redacted_thinking","data":"xyz"}]}]}`)
		parts := conv.Messages[1].Parts
		if len(parts) != 2 || parts[0].Type != "server_tool_use" || parts[0].Raw != raw || parts[1].Type != anthropic.PartRedactedThinking {
			t.Errorf("parts %+v", parts)
		}
	})
}

func TestReadRequestInvalid(t *testing.T) {
	msgs := func(content string) string {
		return `{"max_tokens":10,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":` + content + `}]}`
	}
	for _, c := range []struct {
		name, body, want string
	}{
		{"NotJSON", `{"max_tokens":`, "not a JSON object"},
		{"NotObject", `[1,2]`, "not a JSON object"},
		{"Null", `null`, "not a JSON object"},
		{"BadUTF8", "{\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", "UTF-8"},
		{"LoneSurrogate", `{"max_tokens":1,"messages":[{"role":"user","content":"\ud800"}]}`, "surrogate"},
		{"NoMessages", `{"max_tokens":1}`, "messages: at least one message"},
		{"EmptyMessages", `{"max_tokens":1,"messages":[]}`, "messages: at least one message"},
		{"MessagesNotArray", `{"max_tokens":1,"messages":{}}`, "messages: must be an array"},
		{"NoMaxTokens", `{"messages":[{"role":"user","content":"x"}]}`, "max_tokens: required"},
		{"ZeroMaxTokens", `{"max_tokens":0,"messages":[{"role":"user","content":"x"}]}`, "max_tokens: must be at least 1, not 0"},
		{"NegativeMaxTokens", `{"max_tokens":-5,"messages":[{"role":"user","content":"x"}]}`, "max_tokens: must be at least 1"},
		{"FractionalMaxTokens", `{"max_tokens":1.5,"messages":[{"role":"user","content":"x"}]}`, "max_tokens: must be an integer"},
		{"OnlySystem", `{"max_tokens":1,"messages":[{"role":"system","content":"x"}]}`, `messages: at least one user or assistant message`},
		{"ToolRole", `{"max_tokens":1,"messages":[{"role":"tool","content":"x"}]}`, `messages[0].role: must be "user", "assistant" or "system", not "tool"`},
		{"SystemImage", msgs(`"x"},{"role":"system","content":[{"type":"image","source":{"type":"url","url":"u"}}]`), `messages[3].content[0]: a system message holds only text blocks, not "image"`},
		{"NoRole", `{"max_tokens":1,"messages":[{"content":"x"}]}`, "messages[0].role: required"},
		{"NoContent", `{"max_tokens":1,"messages":[{"role":"user"}]}`, "messages[0].content: required"},
		{"NumberContent", `{"max_tokens":1,"messages":[{"role":"user","content":3}]}`, "messages[0].content: must be a string or an array"},
		{"MessageNotObject", `{"max_tokens":1,"messages":["hi"]}`, "messages[0]: must be an object"},
		{"UnknownBlock", msgs(`[{"type":"text","text":"ok"},{"type":"nonsense"}]`), `messages[2].content[1]: unknown content block type "nonsense"`},
		{"UntypedBlock", msgs(`[{"text":"ok"}]`), "messages[2].content[0]: a content block needs a type"},
		{"BlockNotObject", msgs(`["text"]`), "messages[2].content[0]: a content block must be an object"},
		{"TextNotString", msgs(`[{"type":"text","text":5}]`), "messages[2].content[0]: text:"},
		{"ToolResultWithoutID", msgs(`[{"type":"tool_result","content":"x"}]`), "messages[2].content[0]: a tool_result block needs a tool_use_id"},
		{"ToolResultNested", msgs(`[{"type":"tool_result","tool_use_id":"a","content":[{"type":"tool_use","id":"x","name":"y","input":{}}]}]`), "messages[2].content[0].content[0]: a tool result holds"},
		{"ToolResultBadContent", msgs(`[{"type":"tool_result","tool_use_id":"a","content":7}]`), "messages[2].content[0].content: must be"},
		{"ToolUseInUser", msgs(`[{"type":"tool_use","id":"a","name":"b","input":{}}]`), "messages[2].content[0]: a tool_use block belongs in an assistant message"},
		{"ToolResultInAssistant", `{"max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"a"}]}]}`, "messages[0].content[0]: a tool_result block belongs in a user message"},
		{"ToolUseWithoutName", `{"max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","input":{}}]}]}`, "messages[0].content[0]: a tool_use block needs an id and a name"},
		{"ImageWithoutSource", msgs(`[{"type":"image"}]`), "messages[2].content[0].source: an image block needs a source"},
		{"ToolWithoutName", `{"max_tokens":1,"tools":[{"input_schema":{}}],"messages":[{"role":"user","content":"x"}]}`, "tools[0]: a tool needs a name"},
		{"ServerToolWithoutName", `{"max_tokens":1,"tools":[{"type":"web_search_20250305"}],"messages":[{"role":"user","content":"x"}]}`, `tools[0]: a tool needs a name`},
		{"ToolsNotArray", `{"max_tokens":1,"tools":{},"messages":[{"role":"user","content":"x"}]}`, "tools: must be an array"},
		{"ToolChoiceType", `{"max_tokens":1,"tool_choice":{"type":"maybe"},"messages":[{"role":"user","content":"x"}]}`, `tool_choice.type: must be "auto", "any", "tool" or "none", not "maybe"`},
		{"ToolChoiceNoName", `{"max_tokens":1,"tool_choice":{"type":"tool"},"messages":[{"role":"user","content":"x"}]}`, "tool_choice.name: required"},
		{"SystemBlockType", `{"max_tokens":1,"system":[{"type":"image","source":{"type":"url","url":"u"}}],"messages":[{"role":"user","content":"x"}]}`, `system[0]: the system prompt holds only text blocks, not "image"`},
		{"SystemNumber", `{"max_tokens":1,"system":1,"messages":[{"role":"user","content":"x"}]}`, "system: must be a string or an array"},
		{"StreamString", `{"max_tokens":1,"stream":"yes","messages":[{"role":"user","content":"x"}]}`, "stream: must be true or false"},
		{"ModelNumber", `{"max_tokens":1,"model":3,"messages":[{"role":"user","content":"x"}]}`, "model: must be a string"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conv, err := anthropic.ReadRequest([]byte(c.body))
			if err == nil {
				t.Fatalf("no error; conversation %+v", conv)
			}
			if hippocam.ErrorCode(err) != hippocam.EINVALID {
				t.Errorf("code %q, want invalid (%v)", hippocam.ErrorCode(err), err)
			}
			if msg := hippocam.ErrorMessage(err); !strings.Contains(msg, c.want) {
				t.Errorf("message %q does not contain %q", msg, c.want)
			}
		})
	}
}

func mustRead(t *testing.T, body string) *hippocam.Conversation {
	t.Helper()
	conv, err := anthropic.ReadRequest([]byte(body))
	if err != nil {
		t.Fatalf("ReadRequest(%s): %v", body, err)
	}
	return conv
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
