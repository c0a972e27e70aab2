package wire

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
)

// refReadChatRequest is ReadChatRequest as it was before it read the messages in the decoder's
// pass: decode the whole request (json.Unmarshal), find every message's bytes (rawMessages, else
// encoding/json), then convert each message (refToMessage). The conversation it gives, and its
// errors, are the reference.
func refReadChatRequest(body []byte) (*hippocam.Conversation, error) {
	if err := hippocam.CheckText(body); err != nil {
		return nil, err
	}
	var req ChatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "the request body is not valid JSON for chat completions: %v", err)
	}
	var raw struct {
		Messages []json.RawMessage `json:"messages"`
	}
	var ok bool
	if raw.Messages, ok = rawMessages(body); !ok {
		if err := json.Unmarshal(body, &raw); err != nil {
			return nil, hippocam.Errorf(hippocam.EINVALID, "messages must be an array of message objects")
		}
	}
	if len(raw.Messages) != len(req.Messages) {
		return nil, hippocam.Errorf(hippocam.EINVALID, "messages must be an array of message objects")
	}
	if len(req.Messages) == 0 {
		return nil, hippocam.Errorf(hippocam.EINVALID, "messages must be a non-empty array")
	}
	if n, ok := req.Extra["n"]; ok && string(n) != "1" && string(n) != "null" {
		return nil, hippocam.Errorf(hippocam.EINVALID, "n must be 1: Hippocam keeps one answer per request")
	}
	conv := &hippocam.Conversation{Format: hippocam.FormatChat, Model: req.Model, Stream: req.Stream, Store: true,
		Messages: make([]hippocam.Message, 0, len(req.Messages))}
	framing := true
	for i, c := range req.Messages {
		m, err := refToMessage(c)
		if err != nil {
			return nil, hippocam.Errorf(hippocam.EINVALID, "messages[%d]: %s", i, hippocam.ErrorMessage(err))
		}
		if m.Parts, err = chatParts(c.Content); err != nil {
			return nil, hippocam.Errorf(hippocam.EINVALID, "messages[%d].%s", i, hippocam.ErrorMessage(err))
		}
		for j, tc := range c.ToolCalls {
			if strings.TrimSpace(tc.Function.Name) == "" {
				return nil, hippocam.Errorf(hippocam.EINVALID, "messages[%d].tool_calls[%d] names no function", i, j)
			}
		}
		if m.Role == hippocam.RoleTool && c.ToolCallID == "" {
			return nil, hippocam.Errorf(hippocam.EINVALID, "messages[%d]: a tool message needs a tool_call_id", i)
		}
		m.Origin = &hippocam.Origin{Format: hippocam.FormatChat, Raw: string(raw.Messages[i])}
		if framing && m.Role == hippocam.RoleSystem {
			conv.Framing = append(conv.Framing, m)
			continue
		}
		framing = false
		conv.Messages = append(conv.Messages, m)
	}
	for i, d := range req.Tools {
		if d.Type != "" && d.Type != "function" {
			t, err := otherTool(i, d)
			if err != nil {
				return nil, err
			}
			conv.Tools = append(conv.Tools, t)
			continue
		}
		if strings.TrimSpace(d.Function.Name) == "" {
			return nil, hippocam.Errorf(hippocam.EINVALID, "tools[%d] has no function name", i)
		}
		conv.Tools = append(conv.Tools, ToTool(d))
	}
	var err error
	if conv.ToolChoice, err = chatToolChoice(req.ToolChoice); err != nil {
		return nil, err
	}
	if conv.Extra, err = chatExtra(&req); err != nil {
		return nil, err
	}
	if conv.MaxTokens, err = chatLimit(&req); err != nil {
		return nil, err
	}
	return conv, nil
}

// refToMessage is ToMessage as first written.
func refToMessage(c ChatMessage) (hippocam.Message, error) {
	role := hippocam.Role(c.Role)
	if c.Role == "developer" {
		role = hippocam.RoleSystem
	}
	if !role.Valid() {
		return hippocam.Message{}, hippocam.Errorf(hippocam.EINVALID, "unknown message role %q", c.Role)
	}
	text, err := c.Text()
	if err != nil {
		return hippocam.Message{}, hippocam.Errorf(hippocam.EINVALID, "message content: %v", err)
	}
	m := hippocam.Message{Role: role, Kind: hippocam.KindRaw, Content: text, ToolCallID: c.ToolCallID}
	for _, tc := range c.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, hippocam.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	extra := Extra{}
	for k, v := range c.Extra {
		extra[k] = v
	}
	if len(c.Content) > 0 && c.Content[0] != '"' {
		extra["content"] = c.Content
	}
	if c.Name != "" {
		extra["name"], _ = json.Marshal(c.Name)
	}
	if c.Role == "developer" {
		extra["role"] = json.RawMessage(`"developer"`)
	}
	if len(extra) > 0 {
		m.Extra, _ = json.Marshal(extra)
	}
	return m, nil
}

// checkRead compares ReadChatRequest with the reference on one body.
func checkRead(t *testing.T, body []byte) bool {
	t.Helper()
	want, errWant := refReadChatRequest(body)
	got, req, errGot := ReadChatRequest(body)
	if fmt.Sprint(errGot) != fmt.Sprint(errWant) {
		t.Fatalf("ReadChatRequest(%q):\nerror %v\nwant  %v", body, errGot, errWant)
	}
	if errGot != nil {
		return false
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadChatRequest(%q):\ngot  %#v\nwant %#v", body, got, want)
	}
	if req.Messages != nil {
		t.Fatalf("the request keeps %d messages", len(req.Messages))
	}
	return true
}

// TestReadChatRequestMatchesReference reads generated chat requests, valid and odd (see gen),
// some with messages of every role and content shape the reader checks, and compares.
func TestReadChatRequestMatchesReference(t *testing.T) {
	for _, odd := range []float64{0, 0.05, 0.3} {
		g := &gen{r: rand.New(rand.NewPCG(9, uint64(odd*100))), odd: odd}
		read := 0
		for range 3000 {
			if checkRead(t, []byte(g.request())) {
				read++
			}
		}
		t.Logf("odd %v: %d of 3000 read", odd, read)
	}
	g := &gen{r: rand.New(rand.NewPCG(10, 11))}
	parts := []string{`"text"`, `null`, `[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}}]`,
		`[{"type":"input_audio","input_audio":{"data":"AA","format":"wav"}}]`, `[{"type":"file","file":{"file_id":"f"}}]`, `[{"type":"video"}]`, `7`, `[{"type":"image_url"}]`}
	read := 0
	for range 3000 {
		var msgs []string
		for range 1 + g.r.IntN(5) {
			m := fmt.Sprintf(`{"role":%q,"content":%s`, g.pick("system", "developer", "user", "user", "assistant", "assistant", "tool", "x"), g.pick(parts[:5]...))
			if g.p(0.05) {
				m = fmt.Sprintf(`{"role":"user","content":%s`, g.pick(parts...))
			}
			if g.p(0.3) {
				m += `,"tool_calls":[{"id":"c1","type":"function","function":{"name":` + g.pick(`"f"`, `"f"`, `"f"`, `" "`) + `,"arguments":"{}"}}]`
			}
			if g.p(0.3) {
				m += `,"tool_call_id":` + g.pick(`"c1"`, `"c1"`, `""`)
			}
			if g.p(0.2) {
				m += `,"name":"ann","cache_control":{"type":"ephemeral"}`
			}
			msgs = append(msgs, m+"}")
		}
		body := `{"model":"m","messages":[` + strings.Join(msgs, ",") + `]` + g.pick("", "", "", `,"n":2`, `,"n":1`, `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`, `,"tools":[{"type":"x"}]`, `,"tool_choice":"auto"`, `,"max_tokens":5`) + "}"
		if checkRead(t, []byte(body)) {
			read++
		}
	}
	if read < 600 {
		t.Errorf("only %d of 3000 bodies read", read)
	}
	checkRead(t, benchBody())
}

// TestReadChatRequestOwnsItsValues checks that the conversation shares no memory with the body:
// the proxy keeps messages and tools long after the request.
func TestReadChatRequestOwnsItsValues(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"https://x"}}],"x":{"k":1}}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"temperature":1}`)
	conv, _, err := ReadChatRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	before := fmt.Sprintf("%#v", conv)
	for i := range body {
		body[i] = 'X'
	}
	if after := fmt.Sprintf("%#v", conv); after != before {
		t.Errorf("the conversation changed with the body:\n%s\n%s", before, after)
	}
}

// TestChatReaderMatchesReadChatRequest reads sessions of requests through one ChatReader with
// little or much room, and compares each conversation with ReadChatRequest's and its Hashes with
// TranscriptChain. The requests grow, edit a message they resend (byte for byte different but
// the same JSON value too), change their framing, fork, interleave two sessions, and fail.
func TestChatReaderMatchesReadChatRequest(t *testing.T) {
	g := &gen{r: rand.New(rand.NewPCG(12, 13))}
	msg := func() string {
		switch g.r.IntN(5) {
		case 0:
			return fmt.Sprintf(`{"role":"assistant","tool_calls":[{"id":"c%d","type":"function","function":{"name":"f","arguments":%s}}]}`,
				g.r.IntN(3), g.pick(`"{\"a\":1}"`, `"{ \"a\" : 1 }"`, `"{}"`))
		case 1:
			return fmt.Sprintf(`{"role":"tool","tool_call_id":"c%d","content":%s}`, g.r.IntN(3), g.pick(`"ok"`, `"x\ny"`))
		case 2:
			return fmt.Sprintf(`{"role":"assistant","content":%s}`, g.pick(`"done"`, `"<b>"`, `null`))
		}
		if g.p(0.02) { // text the reader must refuse, after messages it reuses
			return fmt.Sprintf(`{"role":"user","content":%s}`, g.pick("\"\xff\"", `"\ud800"`, `"\udc00x"`,
				"[{\"type\":\"text\",\"text\":\"\xff\"}]", `[{"type":"text","text":"\ud800"}]`, `"ok","cache":{"k":"\udc00"}`))
		}
		return fmt.Sprintf(`{"role":"user","content":%s}`, g.pick(`"hi"`, `"h\u0069"`, `[{"type":"text","text":"hi"}]`, `"step"`, `"<&>"`))
	}
	framings := []string{``, `{"role":"system","content":"Be brief."},`, `{"role":"developer","content":"Be brief."},{"role":"system","content":"x"},`}
	for _, room := range []int{0, 10, 1000, 100000} {
		r := NewChatReader(room)
		type read struct{ got, want *hippocam.Conversation }
		var reads []read // every conversation read, to check at the end that none changed since
		sessions := make([][]string, 3)
		framing := make([]string, 3)
		for range 1500 {
			k := g.r.IntN(len(sessions))
			ms := sessions[k]
			switch {
			case len(ms) > 2 && g.p(0.1):
				ms = ms[:g.r.IntN(len(ms))]
			case len(ms) > 0 && g.p(0.1):
				ms = append([]string(nil), ms...)
				ms[g.r.IntN(len(ms))] = msg()
			case g.p(0.05):
				framing[k] = g.pick(framings...)
			}
			for range 1 + g.r.IntN(3) {
				ms = append(ms, msg())
			}
			sessions[k] = ms
			body := `{"model":"m","messages":[` + framing[k] + strings.Join(ms, ",") + `]` + g.pick("", `,"temperature":1`, `,"n":2`, `,"tools":7`) + `}`
			if g.p(0.02) {
				body = body[:len(body)/2]
			}
			want, _, errWant := ReadChatRequest([]byte(body))
			got, _, errGot := r.Read([]byte(body))
			if fmt.Sprint(errGot) != fmt.Sprint(errWant) {
				t.Fatalf("room %d: Read(%s):\nerror %v\nwant  %v", room, body, errGot, errWant)
			}
			if terr := hippocam.CheckText([]byte(body)); terr != nil && fmt.Sprint(errGot) != fmt.Sprint(terr) {
				t.Fatalf("room %d: Read(%s):\nerror %v\nwant  %v", room, body, errGot, terr)
			}
			if errGot != nil {
				continue
			}
			chain := hippocam.TranscriptChain("", got.Messages)
			if !reflect.DeepEqual(got.Hashes, chain) {
				t.Fatalf("room %d: Read(%s): hashes\n%q\nwant %q", room, body, got.Hashes, chain)
			}
			want.Hashes = chain
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("room %d: Read(%s):\ngot  %#v\nwant %#v", room, body, got, want)
			}
			reads = append(reads, read{got, want})
		}
		for i, rd := range reads {
			if !reflect.DeepEqual(rd.got, rd.want) {
				t.Fatalf("room %d: the conversation of read %d changed after later reads", room, i)
			}
		}
		if r.kept > room || (room >= 1000 && len(r.recent) == 0) {
			t.Errorf("room %d: %d messages kept in %d requests", room, r.kept, len(r.recent))
		}
	}
}
