package wire

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
)

// refBody is how the model client wrote a request before RequestWriter: json.Marshal over
// FromRequest's value, less the members of Extra it sets itself.
func refBody(model string, r *hippocam.Request, stream bool) ([]byte, error) {
	wr, err := FromRequest(model, r)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"model", "messages", "stream", "stream_options"} {
		delete(wr.Extra, k)
	}
	if len(wr.Tools) > 0 {
		delete(wr.Extra, "tools")
	}
	if len(wr.ToolChoice) > 0 {
		delete(wr.Extra, "tool_choice")
	}
	if wr.MaxTokens != nil {
		delete(wr.Extra, "max_tokens")
	}
	if stream {
		wr.Stream = true
		wr.StreamOptions = &StreamOptions{IncludeUsage: true}
	}
	b, err := json.Marshal(wr)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return b, nil
}

// checkBody compares w.Body with refBody: same bytes, or the same error.
func checkBody(t *testing.T, w *RequestWriter, model string, r *hippocam.Request, stream bool) {
	t.Helper()
	want, errWant := refBody(model, r, stream)
	got, errGot := w.Body(model, r, stream)
	if fmt.Sprint(errGot) != fmt.Sprint(errWant) {
		t.Fatalf("error %v, want %v\nrequest %#v", errGot, errWant, r)
	}
	if string(got) != string(want) {
		t.Fatalf("body differs from the reference\ngot  %s\nwant %s", got, want)
	}
}

// domainGen makes domain requests with the values that exercise every branch of the writer.
type domainGen struct{ r *rand.Rand }

func (g *domainGen) p(prob float64) bool { return g.r.Float64() < prob }

func (g *domainGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

func (g *domainGen) text() string {
	var b strings.Builder
	for range g.r.IntN(6) {
		b.WriteString(g.pick("a", "word ", "<b>", "&amp;", "\"q\"", `back\slash`, "\n", "\t", "\x01", "é", "日本", "\u2028", "\u2029",
			"\xff", "\xe2\x80", "😀", "\ufffd", "</script>", "{\"k\":1}", ""))
	}
	return b.String()
}

func (g *domainGen) rawJSON() string {
	return g.pick(`{"type":"ephemeral"}`, `{ "a" : [1, 2], "b":"<x>" }`, `null`, `"s"`, `12.50`, `[ ]`, `{"k":"\u2028&"}`, `{bad`, ``, `"\ud800"`)
}

func (g *domainGen) message() hippocam.Message {
	m := hippocam.Message{ID: fmt.Sprint("m", g.r.IntN(100)), Kind: hippocam.KindRaw,
		Role: hippocam.Role(g.pick("user", "assistant", "tool", "system"))}
	if g.p(0.8) {
		m.Content = g.text()
	}
	if m.Role == hippocam.RoleAssistant && g.p(0.4) {
		for range 1 + g.r.IntN(2) {
			m.ToolCalls = append(m.ToolCalls, hippocam.ToolCall{ID: g.pick("", "c1", "call_<2>"), Name: g.pick("", "read", "r&w"),
				Arguments: g.pick(`{"path":"a.go"}`, `{ "x" : "<y>" }`, ``, `not json`, `{"s":"\u2028"}`)})
		}
	}
	if m.Role == hippocam.RoleTool {
		m.ToolCallID = g.pick("c1", "call_<2>", "")
	}
	if g.p(0.2) {
		var members []string
		for range g.r.IntN(4) {
			k := g.pick("content", "role", "name", "cache_control", "x_a", "refusal")
			v := g.rawJSON()
			if v == `{bad` || v == `` {
				v = `1`
			}
			if k == "role" {
				v = g.pick(`"developer"`, `7`, `"user"`)
			}
			if k == "name" {
				v = g.pick(`"ann"`, `"<b>"`, `3`)
			}
			members = append(members, fmt.Sprintf("%q:%s", k, v))
		}
		m.Extra = json.RawMessage("{" + strings.Join(members, ",") + "}")
		if g.p(0.1) {
			m.Extra = json.RawMessage(g.pick(`{bad`, `[1]`, `"s"`))
		}
	}
	if g.p(0.15) {
		for range 1 + g.r.IntN(3) {
			p := hippocam.Part{Type: g.pick(hippocam.PartImage, hippocam.PartAudio, hippocam.PartFile, "video"),
				MediaType: g.pick("", "image/png", "audio/wav", "application/pdf"), Data: g.pick("", "AAAA"),
				URL: g.pick("", "https://x/<a>.png"), FileID: g.pick("", "file-1"), Name: g.pick("", "a.pdf"), Detail: g.pick("", "low")}
			if g.p(0.3) {
				p.Format, p.Raw = hippocam.FormatChat, g.pick(`{"type":"image_url","image_url":{"url":"https://x"}}`, `{ "type" : "file" }`)
			}
			m.Parts = append(m.Parts, p)
		}
	}
	return m
}

func (g *domainGen) request() *hippocam.Request {
	r := &hippocam.Request{Role: hippocam.CallAgent, ToolChoice: g.pick("", "", "auto", "none", "required", "read", "<x>")}
	for range g.r.IntN(8) {
		r.Messages = append(r.Messages, g.message())
	}
	if g.p(0.1) {
		r.Messages = nil
	} else if r.Messages == nil && g.p(0.5) {
		r.Messages = []hippocam.Message{}
	}
	for range g.r.IntN(3) {
		params := g.pick(`{"type":"object"}`, `{ "type" : "object", "properties" : {} }`, ``, `{"d":"<&>"}`)
		if g.p(0.05) {
			params = `{bad`
		}
		r.Tools = append(r.Tools, hippocam.Tool{Name: g.pick("read", "run"), Description: g.text(), Parameters: json.RawMessage(params)})
	}
	if g.p(0.3) {
		r.MaxTokens = g.r.IntN(3) * 100
	}
	if g.p(0.4) {
		var members []string
		for range 1 + g.r.IntN(4) {
			members = append(members, fmt.Sprintf("%q:%s", g.pick("temperature", "model", "messages", "stream", "stream_options",
				"tools", "tool_choice", "max_tokens", "metadata", "zeta", "a"), g.pick(`0.5`, `{ "u" : "<v>" }`, `[1, 2]`, `"x"`, `null`)))
		}
		r.Extra = json.RawMessage("{" + strings.Join(members, ",") + "}")
		if g.p(0.05) {
			r.Extra = json.RawMessage(g.pick(`[1]`, `{bad`))
		}
	}
	return r
}

// TestRequestWriterMatchesReference writes generated requests, each with a fresh writer (no
// kept encodings), and compares every body with the reference.
func TestRequestWriterMatchesReference(t *testing.T) {
	g := &domainGen{r: rand.New(rand.NewPCG(1, 2))}
	for range 20000 {
		checkBody(t, NewRequestWriter(0), g.pick("m", "gpt-<4>"), g.request(), g.p(0.5))
	}
}

// TestRequestWriterReuse sends sessions of requests through one writer with little room, so
// that kept encodings are reused, replaced and evicted, and compares every body with the
// reference. The requests do what a session does (grow, share a prefix with a sibling
// request, fork, regenerate) and what a caller must not be punished for: a message changed in
// place in the request slice, and the tool calls of a message changed after it was sent.
func TestRequestWriterReuse(t *testing.T) {
	g := &domainGen{r: rand.New(rand.NewPCG(3, 4))}
	for _, room := range []int{0, 1 << 10, 1 << 14, 1 << 20} {
		w := NewRequestWriter(room)
		sessions := make([][]hippocam.Message, 4)
		for range 3000 {
			k := g.r.IntN(len(sessions))
			msgs := sessions[k]
			switch {
			case len(msgs) > 2 && g.p(0.1): // a fork or a regeneration: drop the tail
				msgs = msgs[:g.r.IntN(len(msgs))]
			case len(msgs) > 0 && g.p(0.1): // a message of the context replaced in place
				i := g.r.IntN(len(msgs))
				msgs = append([]hippocam.Message(nil), msgs...)
				msgs[i] = g.message()
			case len(msgs) > 0 && g.p(0.05): // tool calls changed in their own backing array
				i := g.r.IntN(len(msgs))
				if len(msgs[i].ToolCalls) > 0 {
					msgs[i].ToolCalls[0].Arguments = g.pick(`{"changed":true}`, `{"x":"<y>"}`)
				}
			}
			for range g.r.IntN(3) {
				msgs = append(msgs, g.message())
			}
			sessions[k] = msgs
			r := g.request()
			r.Messages = msgs
			checkBody(t, w, "m", r, g.p(0.5))
			if g.p(0.5) { // the sibling request of the same step: the context and one more
				sibling := *r
				sibling.Messages = append(append([]hippocam.Message(nil), msgs...), g.message())
				checkBody(t, w, "m", &sibling, false)
			}
		}
		if w.size > room {
			t.Errorf("room %d: the writer keeps %d bytes", room, w.size)
		}
		if room >= 1<<20 && len(w.recent) == 0 {
			t.Errorf("room %d: nothing kept", room)
		}
	}
}

// TestRequestWriterLongSession grows one session past several chunks of kept keys, with changes
// on both sides of chunk boundaries, and compares every body with the reference.
func TestRequestWriterLongSession(t *testing.T) {
	g := &domainGen{r: rand.New(rand.NewPCG(5, 6))}
	w := NewRequestWriter(1 << 30)
	var msgs []hippocam.Message
	for step := range 400 {
		for range 1 + g.r.IntN(4) {
			msgs = append(msgs, g.message())
		}
		if step%7 == 6 { // a message near a chunk boundary changes (a fold, a regeneration)
			i := min(len(msgs)-1, chunkLen*(1+g.r.IntN(3))-1+g.r.IntN(3))
			msgs = append([]hippocam.Message(nil), msgs...)
			msgs[i] = g.message()
		}
		r := &hippocam.Request{Messages: msgs}
		checkBody(t, w, "m", r, false)
		checkBody(t, w, "m", &hippocam.Request{Messages: append(msgs[:len(msgs):len(msgs)], g.message())}, true)
	}
	if len(msgs) < 3*chunkLen {
		t.Fatalf("the session reached only %d messages", len(msgs))
	}
	if last := w.recent[len(w.recent)-1]; last.keys.n != len(msgs)+1 || len(last.keys.all) != len(msgs)/chunkLen+1 {
		t.Errorf("the last encoding kept has %d messages in %d chunks", last.keys.n, len(last.keys.all))
	}
}
