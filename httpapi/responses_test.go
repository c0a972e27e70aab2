package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/openai/wire"
)

// postResponses sends a Responses request and decodes the (non-streamed) response.
func postResponses(t *testing.T, s *testServer, session, body string) (wire.Response, reply) {
	t.Helper()
	r := s.do(t, "POST", "/v1/responses", "", session, []byte(body))
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var resp wire.Response
	r.json(t, &resp)
	return resp, r
}

func outputText(resp wire.Response) string {
	var b strings.Builder
	for _, it := range resp.Output {
		for _, c := range it.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// A tool loop over the Responses API, first with the whole input every time, then with
// previous_response_id and only the new items, then with item references; all in one session.
func TestResponsesToolLoop(t *testing.T) {
	s := newServer(t, 8000, nil)
	tools := `"tools":[{"type":"function","name":"read_file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}]`
	first := `{"model":"m","instructions":"Be brief.",` + tools + `,"input":"Read it.\n!call read_file {\"path\":\"a.txt\"}"}`
	resp, r := postResponses(t, s, "", first)
	session := r.header.Get(httpapi.SessionHeader)
	if len(resp.Output) != 1 || resp.Output[0].Type != "function_call" || resp.Output[0].Name != "read_file" {
		t.Fatalf("first answer: %+v", resp.Output)
	}
	call := resp.Output[0]
	// The next turn names only the new item and the previous response.
	next := `{"model":"m","instructions":"Be brief.",` + tools + `,"previous_response_id":"` + resp.ID + `","input":[{"type":"function_call_output","call_id":"` + call.CallID + `","output":"text of a\n!say read it"}]}`
	resp2, r2 := postResponses(t, s, "", next)
	if outputText(resp2) != "read it" || r2.header.Get(httpapi.SessionHeader) != session || r2.header.Get(httpapi.EventHeader) != "continued" {
		t.Fatalf("second answer %q in %q (%s), want \"read it\" in %q", outputText(resp2), r2.header.Get(httpapi.SessionHeader), r2.header.Get(httpapi.EventHeader), session)
	}
	// The whole input again, earlier output as item references, continues the same session.
	callItem, _ := json.Marshal(call)
	whole := `{"model":"m","instructions":"Be brief.",` + tools + `,"input":[` +
		`{"role":"user","content":"Read it.\n!call read_file {\"path\":\"a.txt\"}"},` + string(callItem) + `,` +
		`{"type":"function_call_output","call_id":"` + call.CallID + `","output":"text of a\n!say read it"},` +
		`{"type":"item_reference","id":"` + resp2.Output[0].ID + `"},` +
		`{"role":"user","content":[{"type":"input_text","text":"!say done"}]}]}`
	resp3, r3 := postResponses(t, s, "", whole)
	if outputText(resp3) != "done" || r3.header.Get(httpapi.SessionHeader) != session {
		t.Fatalf("third answer %q in %q, want \"done\" in %q", outputText(resp3), r3.header.Get(httpapi.SessionHeader), session)
	}
	if resp3.Usage == nil || resp3.Usage.InputTokens == 0 {
		t.Fatalf("usage: %+v", resp3.Usage)
	}
	// Streamed: the events end with response.completed carrying the same answer.
	stream := strings.Replace(whole, `"!say done"`, `"!say streamed"`, 1)
	stream = strings.Replace(stream, `"input":[`, `"stream":true,"input":[`, 1)
	stream = strings.Replace(stream, `{"role":"user","content":[{"type":"input_text","text":"!say streamed"}]}]}`,
		`{"role":"user","content":[{"type":"input_text","text":"!say done"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]},{"role":"user","content":"!say streamed"}]}`, 1)
	rs := s.do(t, "POST", "/v1/responses", "", "", []byte(stream))
	events, err := wire.ReadResponseEvents(strings.NewReader(string(rs.body)))
	if err != nil || len(events) == 0 {
		t.Fatalf("stream: %v %s", err, rs.body)
	}
	last := events[len(events)-1]
	if last.Type != "response.completed" || outputText(*last.Response) != "streamed" || rs.header.Get(httpapi.SessionHeader) != session {
		t.Fatalf("stream ended with %s %q in %q", last.Type, outputText(*last.Response), rs.header.Get(httpapi.SessionHeader))
	}
	// A previous_response_id of nothing, an unknown item or part, invalid UTF-8 and a tool
	// without a name are refused, and change nothing.
	before := s.do(t, "GET", "/api/sessions/"+session, "", "", nil).body
	for _, bad := range []string{
		"{\"model\":\"m\",\"input\":\"\xff\"}",
		`{"model":"m","tools":[{"type":"function","name":""}],"input":"hi"}`,
		`{"model":"m","previous_response_id":"resp_nothing","input":"hi"}`,
		`{"model":"m","input":[{"type":"nonsense"}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"nonsense"}]}]}`,
	} {
		r := s.do(t, "POST", "/v1/responses", "", "", []byte(bad))
		var e wire.ErrorResponse
		if (r.status != 400 && r.status != 404) || json.Unmarshal(r.body, &e) != nil || e.Error.Message == "" {
			t.Errorf("%s: status %d %s", bad, r.status, r.body)
		}
	}
	if after := s.do(t, "GET", "/api/sessions/"+session, "", "", nil).body; string(after) != string(before) {
		t.Fatal("a refused request changed the session")
	}
	var list struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	s.do(t, "GET", "/api/sessions", "", "", nil).json(t, &list)
	if len(list.Sessions) != 1 {
		t.Fatalf("%d sessions, want 1", len(list.Sessions))
	}
}
