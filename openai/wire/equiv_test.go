package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// These tests compare the fast decoder and encoder with the reference implementation
// (ref_test.go) on generated documents: valid ones of every shape, and ones with the oddities
// that send the fast paths to the slow one (wrong types, repeated or case-folded keys, escaped
// keys, invalid JSON, invalid raw values…). Results, encoded bytes and error messages must be
// identical.

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.ReplaceAll(err.Error(), "Zref", "")
}

// kind is one of the types with Extra, with its reference twin.
type kind struct {
	name     string
	newReal  func() any // pointer to a zero value
	newRef   func() any
	fromRef  func(any) any // *Zref… -> value of the real type
	toRef    func(any) any // value of the real type -> value of the reference type
	deref    func(any) any // pointer -> value
	generate func(*gen) string
	fast     func(*decoder) bool // the fast decoder alone
}

var kinds = []kind{
	{
		name: "ChatRequest", newReal: func() any { return new(ChatRequest) }, newRef: func() any { return new(ZrefChatRequest) },
		fromRef:  func(v any) any { return reqFromRef(*v.(*ZrefChatRequest)) },
		toRef:    func(v any) any { return reqToRef(v.(ChatRequest)) },
		deref:    func(v any) any { return *v.(*ChatRequest) },
		generate: (*gen).request,
		fast:     func(d *decoder) bool { var v ChatRequest; return d.request(&v) && d.end() },
	},
	{
		name: "ChatMessage", newReal: func() any { return new(ChatMessage) }, newRef: func() any { return new(ZrefChatMessage) },
		fromRef:  func(v any) any { return msgFromRef(*v.(*ZrefChatMessage)) },
		toRef:    func(v any) any { return msgToRef(v.(ChatMessage)) },
		deref:    func(v any) any { return *v.(*ChatMessage) },
		generate: (*gen).message,
		fast:     func(d *decoder) bool { var v ChatMessage; return d.message(&v) && d.end() },
	},
	{
		name: "ToolDef", newReal: func() any { return new(ToolDef) }, newRef: func() any { return new(ZrefToolDef) },
		fromRef:  func(v any) any { return toolFromRef(*v.(*ZrefToolDef)) },
		toRef:    func(v any) any { return toolToRef(v.(ToolDef)) },
		deref:    func(v any) any { return *v.(*ToolDef) },
		generate: (*gen).toolDef,
		fast:     func(d *decoder) bool { var v ToolDef; return d.toolDef(&v) && d.end() },
	},
	{
		name: "ChatResponse", newReal: func() any { return new(ChatResponse) }, newRef: func() any { return new(ZrefChatResponse) },
		fromRef:  func(v any) any { return respFromRef(*v.(*ZrefChatResponse)) },
		toRef:    func(v any) any { return respToRef(v.(ChatResponse)) },
		deref:    func(v any) any { return *v.(*ChatResponse) },
		generate: (*gen).response,
		fast:     func(d *decoder) bool { var v ChatResponse; return d.response(&v) && d.end() },
	},
}

// checkDecode decodes b as k both ways, with json.Unmarshal and with UnmarshalJSON directly,
// and compares; then it compares the encodings of what was decoded. It reports whether the
// document decoded without error.
func checkDecode(t testing.TB, k kind, b []byte) bool {
	t.Helper()
	type unmarshaler interface{ UnmarshalJSON([]byte) error }
	ok := false
	for _, direct := range []bool{false, true} {
		got, want := k.newReal(), k.newRef()
		var errGot, errWant error
		if direct {
			errGot, errWant = got.(unmarshaler).UnmarshalJSON(b), want.(unmarshaler).UnmarshalJSON(b)
		} else {
			errGot, errWant = json.Unmarshal(b, got), json.Unmarshal(b, want)
		}
		if errText(errGot) != errText(errWant) {
			t.Fatalf("%s decode (direct %v) of %q:\nerror %s\nwant  %s", k.name, direct, b, errText(errGot), errText(errWant))
		}
		if g, w := k.deref(got), k.fromRef(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("%s decode (direct %v) of %q:\ngot  %#v\nwant %#v", k.name, direct, b, g, w)
		}
		if errGot == nil {
			ok = true
			checkEncode(t, k, k.deref(got))
		}
	}
	// A failed decoding leaves the value as it was.
	got, want := k.newReal(), k.newRef()
	filled := []byte(`{"model":"m","messages":[{"role":"user","content":"x","zz":1}],"role":"r","type":"t","id":"i","zz":2}`)
	if json.Unmarshal(filled, got) != nil || json.Unmarshal(filled, want) != nil {
		t.Fatal("cannot fill")
	}
	_, _ = json.Unmarshal(b, got), json.Unmarshal(b, want)
	if g, w := k.deref(got), k.fromRef(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s decode of %q over a value:\ngot  %#v\nwant %#v", k.name, b, g, w)
	}
	return ok
}

// checkEncode encodes v (a value of k's real type) and its reference twin with MarshalJSON, with
// json.Marshal and with an Encoder that does not escape HTML, and compares.
func checkEncode(t testing.TB, k kind, v any) {
	t.Helper()
	ref := k.toRef(v)
	type marshaler interface{ MarshalJSON() ([]byte, error) }
	got, errGot := v.(marshaler).MarshalJSON()
	want, errWant := ref.(marshaler).MarshalJSON()
	if errText(errGot) != errText(errWant) || !bytes.Equal(got, want) {
		t.Fatalf("%s MarshalJSON of %#v:\ngot  %q %s\nwant %q %s", k.name, v, got, errText(errGot), want, errText(errWant))
	}
	got, errGot = json.Marshal(v)
	want, errWant = json.Marshal(ref)
	if errText(errGot) != errText(errWant) || !bytes.Equal(got, want) {
		t.Fatalf("%s json.Marshal of %#v:\ngot  %q %s\nwant %q %s", k.name, v, got, errText(errGot), want, errText(errWant))
	}
	var gb, wb bytes.Buffer
	ge, we := json.NewEncoder(&gb), json.NewEncoder(&wb)
	ge.SetEscapeHTML(false)
	we.SetEscapeHTML(false)
	errGot, errWant = ge.Encode(v), we.Encode(ref)
	if errText(errGot) != errText(errWant) || !bytes.Equal(gb.Bytes(), wb.Bytes()) {
		t.Fatalf("%s Encoder of %#v:\ngot  %q %s\nwant %q %s", k.name, v, gb.Bytes(), errText(errGot), wb.Bytes(), errText(errWant))
	}
}

// gen writes random JSON documents in the shapes of the wire types. odd is the probability of
// each oddity.
type gen struct {
	r   *rand.Rand
	odd float64
}

func (g *gen) p(prob float64) bool { return g.r.Float64() < prob }

func (g *gen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

func (g *gen) ws() string {
	if g.p(0.1) {
		return g.pick(" ", "\n", "\t ", "\r\n  ")
	}
	return ""
}

var pieces = []string{"a", "b", "Z", " ", "hello", `"`, `\`, "/", "<", ">", "&", "\n", "\t", "\b", "\f", "\r", "\x01", "\x1f", "\x7f",
	"é", "€", "😀", "\u2028", "\u2029", "\xff", "\xe2\x80", "\xed\xa0\x80", "—", "{\"k\": [1, 2]}"}

// text is a random Go string.
func (g *gen) text() string {
	var sb strings.Builder
	for n := g.r.IntN(6); n > 0; n-- {
		sb.WriteString(pieces[g.r.IntN(len(pieces))])
	}
	return sb.String()
}

// str writes s as a JSON string, with random choices of escapes; odd may add lone surrogates,
// raw control characters or bad escapes.
func (g *gen) str(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			sb.WriteByte(s[i-1])
		case r == '"' || r == '\\' || r < 0x20:
			if r < 0x20 && g.p(g.odd/4) {
				sb.WriteRune(r) // invalid
				break
			}
			short := map[rune]string{'"': `\"`, '\\': `\\`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}[r]
			if short != "" && g.p(0.7) {
				sb.WriteString(short)
			} else {
				fmt.Fprintf(&sb, `\u%04x`, r)
			}
		case g.p(0.1):
			if r > 0xFFFF {
				r1, r2 := 0xD800+((r-0x10000)>>10), 0xDC00+((r-0x10000)&0x3FF)
				fmt.Fprintf(&sb, `\u%04X\u%04x`, r1, r2)
			} else if r == '/' && g.p(0.5) {
				sb.WriteString(`\/`)
			} else {
				fmt.Fprintf(&sb, `\u%04x`, r)
			}
		default:
			sb.WriteRune(r)
		}
		if g.p(g.odd / 4) {
			sb.WriteString(g.pick(`\ud800`, `\udc00`, `\ud83d\ude00`, `\ud83dx`, `\ud800\u0041`))
		}
		if g.p(g.odd / 20) {
			sb.WriteString(g.pick(`\x`, `\u12`, `\'`, `\`))
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

var numbers = []string{"0", "-0", "1", "42", "-7", "1.5", "1e2", "2E-3", "-0.0", "9223372036854775807",
	"9223372036854775808", "-9223372036854775808", "12345678901234567890123"}
var badNumbers = []string{"00", "1.", "-", ".5", "+1", "1e", "0x10", "01", "1.e2", "Infinity", "NaN", "-01"}

// integer is a number for an int field: an integer unless odd.
func (g *gen) integer() string {
	if g.p(g.odd) {
		return g.number()
	}
	return g.pick("0", "-0", "7", "-7", "1234567", "9223372036854775807", "-9223372036854775808")
}

func (g *gen) number() string {
	if g.p(g.odd / 4) {
		return g.pick(badNumbers...)
	}
	if g.p(0.5) {
		return fmt.Sprint(g.r.IntN(1000))
	}
	return g.pick(numbers...)
}

// any is any JSON value.
func (g *gen) any(depth int) string {
	if g.p(g.odd / 20) {
		return g.pick("", "tru", "nul", "[", "{", "}", `{"a"}`, `{"a":}`, "[1,]", `{"a":1,}`, "'x'", "[1 2]", `{1:2}`)
	}
	n := 7
	if depth <= 0 {
		n = 5
	}
	switch g.r.IntN(n) {
	case 0:
		return "null"
	case 1:
		return g.pick("true", "false")
	case 2:
		return g.number()
	case 3, 4:
		return g.str(g.text())
	case 5:
		var parts []string
		for m := g.r.IntN(4); m > 0; m-- {
			parts = append(parts, g.ws()+g.any(depth-1)+g.ws())
		}
		return "[" + strings.Join(parts, ",") + "]"
	default:
		var ms []member
		for m := g.r.IntN(4); m > 0; m-- {
			ms = append(ms, member{g.text(), g.any(depth - 1), true})
		}
		return g.object(ms)
	}
}

// member is an object member; key is written with random escapes if esc is set or by oddity,
// as it is otherwise.
type member struct {
	key, val string
	esc      bool
}

// extraKeys are keys for unknown fields; trickyKeys are unknown to some types but match a field
// of others case-insensitively, or need escapes, or are not ASCII.
var (
	extraKeys  = []string{"temperature", "top_p", "metadata", "x-custom", "", "-", "Extra", "extra", "zz", "a", "aa", "B", "<tag>", "tool_calls", "choices"}
	trickyKeys = []string{"ünï", `a"b`, "MODEL", "Role", "Type", "ID", "Content", "FUNCTION", "\u212aey", "ſtream", "\xff", "k\u2028"}
)

// object writes an object of ms, sometimes shuffled, with random extra members and oddities:
// a member repeated, a key in another case or with escapes.
func (g *gen) object(ms []member) string {
	if g.p(0.3) {
		for m := g.r.IntN(3); m > 0; m-- {
			m := member{key: g.pick(extraKeys...), val: g.any(2)}
			if g.p(g.odd) {
				m.key, m.esc = g.pick(trickyKeys...), true
			}
			ms = append(ms, m)
		}
	}
	if g.p(0.5) {
		g.r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	}
	if len(ms) > 0 && g.p(g.odd) {
		m := ms[g.r.IntN(len(ms))]
		if g.p(0.5) {
			m.val = g.any(1)
		}
		ms = append(ms, m)
	}
	var sb strings.Builder
	sb.WriteString("{" + g.ws())
	for i, m := range ms {
		if i > 0 {
			sb.WriteString("," + g.ws())
		}
		key := `"` + m.key + `"`
		if m.esc || g.p(g.odd) {
			key = g.str(m.key)
		}
		if g.p(g.odd / 2) {
			switch g.r.IntN(3) {
			case 0:
				key = g.str(strings.ToUpper(m.key))
			case 1:
				key = g.str(strings.ToUpper(m.key[:min(1, len(m.key))]) + m.key[min(1, len(m.key)):])
			default:
				var sb strings.Builder
				for _, r := range m.key {
					fmt.Fprintf(&sb, `\u%04x`, r)
				}
				key = `"` + sb.String() + `"`
			}
		}
		sb.WriteString(key + g.ws() + ":" + g.ws() + m.val + g.ws())
	}
	sb.WriteString("}")
	return sb.String()
}

// field adds key with the value of mk to ms, with probability prob; odd replaces the value.
func (g *gen) field(ms []member, prob float64, key string, mk func() string) []member {
	if !g.p(prob) {
		return ms
	}
	switch {
	case g.p(g.odd):
		return append(ms, member{key: key, val: g.any(2)})
	case g.p(0.05):
		return append(ms, member{key: key, val: "null"})
	}
	return append(ms, member{key: key, val: mk()})
}

func (g *gen) array(mk func() string, max int) func() string {
	return func() string {
		var parts []string
		for n := g.r.IntN(max + 1); n > 0; n-- {
			if g.p(0.03) {
				parts = append(parts, "null")
			} else {
				parts = append(parts, g.ws()+mk()+g.ws())
			}
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
}

func (g *gen) textStr() string { return g.str(g.text()) }
func (g *gen) boolean() string { return g.pick("true", "false") }

// top wraps a document with oddities of the whole input: null, surrounding space, trailing data.
func (g *gen) top(doc string) string {
	switch {
	case g.p(0.02):
		return "null"
	case g.p(g.odd / 4):
		return doc + g.pick("x", "{}", ",", "]", " 1")
	case g.p(g.odd / 4):
		return doc[:g.r.IntN(len(doc))]
	case g.p(0.1):
		return " \n" + doc + "\t "
	}
	return doc
}

func (g *gen) request() string {
	var ms []member
	ms = g.field(ms, 0.95, "model", func() string { return g.str(g.pick("gpt-4o", "m", "<m&m>")) })
	ms = g.field(ms, 0.95, "messages", g.array(g.message, 5))
	ms = g.field(ms, 0.4, "tools", g.array(g.toolDef, 3))
	ms = g.field(ms, 0.3, "tool_choice", func() string {
		return g.pick(`"auto"`, `"none"`, `{ "type": "function", "function": {"name":"f<"} }`, g.any(2))
	})
	ms = g.field(ms, 0.3, "stream", g.boolean)
	ms = g.field(ms, 0.2, "stream_options", func() string {
		return g.object(g.field(nil, 0.9, "include_usage", g.boolean))
	})
	ms = g.field(ms, 0.3, "max_tokens", g.integer)
	return g.top(g.object(ms))
}

func (g *gen) message() string {
	var ms []member
	ms = g.field(ms, 0.95, "role", func() string { return g.str(g.pick("user", "assistant", "system", "tool", "developer", "x")) })
	ms = g.field(ms, 0.9, "content", func() string {
		if g.p(0.3) {
			return g.array(func() string {
				return g.object([]member{{key: "type", val: g.str("text")}, {key: "text", val: g.textStr()}})
			}, 3)()
		}
		return g.textStr()
	})
	ms = g.field(ms, 0.1, "name", g.textStr)
	ms = g.field(ms, 0.3, "tool_calls", g.array(g.toolCall, 3))
	ms = g.field(ms, 0.2, "tool_call_id", g.textStr)
	return g.object(ms)
}

func (g *gen) toolCall() string {
	var ms []member
	ms = g.field(ms, 0.2, "index", g.integer)
	ms = g.field(ms, 0.9, "id", g.textStr)
	ms = g.field(ms, 0.9, "type", func() string { return g.str("function") })
	ms = g.field(ms, 0.95, "function", func() string {
		var fs []member
		fs = g.field(fs, 0.9, "name", g.textStr)
		fs = g.field(fs, 0.9, "arguments", func() string { return g.str(g.any(2)) })
		return g.object(fs)
	})
	return g.object(ms)
}

func (g *gen) toolDef() string {
	var ms []member
	ms = g.field(ms, 0.95, "type", func() string { return g.str("function") })
	ms = g.field(ms, 0.95, "function", func() string {
		var fs []member
		fs = g.field(fs, 0.95, "name", g.textStr)
		fs = g.field(fs, 0.5, "description", g.textStr)
		fs = g.field(fs, 0.7, "parameters", func() string { return g.any(3) })
		fs = g.field(fs, 0.2, "strict", g.boolean)
		return g.object(fs)
	})
	return g.object(ms)
}

func (g *gen) response() string {
	var ms []member
	ms = g.field(ms, 0.95, "id", g.textStr)
	ms = g.field(ms, 0.9, "object", func() string { return g.str("chat.completion") })
	ms = g.field(ms, 0.9, "created", g.integer)
	ms = g.field(ms, 0.9, "model", g.textStr)
	ms = g.field(ms, 0.95, "choices", g.array(func() string {
		var cs []member
		cs = g.field(cs, 0.9, "index", g.integer)
		cs = g.field(cs, 0.95, "message", g.message)
		cs = g.field(cs, 0.9, "finish_reason", func() string { return g.str(g.pick("stop", "tool_calls", "length")) })
		return g.object(cs)
	}, 2))
	ms = g.field(ms, 0.7, "usage", func() string {
		var us []member
		for _, k := range []string{"prompt_tokens", "completion_tokens", "total_tokens"} {
			us = g.field(us, 0.9, k, g.integer)
		}
		us = g.field(us, 0.3, "prompt_tokens_details", func() string {
			return g.object(g.field(nil, 0.9, "cached_tokens", g.integer))
		})
		return g.object(us)
	})
	return g.top(g.object(ms))
}

// TestDecodeEncodeMatchReference compares on generated documents, mostly valid (odd 0) and
// with oddities.
func TestDecodeEncodeMatchReference(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	for _, k := range kinds {
		for _, odd := range []float64{0, 0.05, 0.3} {
			t.Run(fmt.Sprintf("%s/odd%v", k.name, odd), func(t *testing.T) {
				g := &gen{r: rand.New(rand.NewPCG(1, uint64(odd*100))), odd: odd}
				decoded, fast := 0, 0
				for range n {
					b := []byte(k.generate(g))
					if checkDecode(t, k, b) {
						decoded++
					}
					if k.fast(newDecoder(b)) {
						fast++
					}
				}
				t.Logf("%d of %d documents decoded, %d by the fast decoder", decoded, n, fast)
				if odd == 0 && (decoded < n*9/10 || fast < n*6/10) {
					t.Errorf("only %d of %d valid documents decoded, %d by the fast decoder", decoded, n, fast)
				}
			})
		}
	}
}

// rawValues are values for RawMessage fields and Extra built in Go: valid, padded, needing
// escapes, and invalid ones that make encoding fail.
var rawValues = []string{`1`, `"x"`, `null`, ` {"a" : [1, 2]} `, "\n\"<&>\u2028\"\t", `{"k":"\u003c"}`, `[]`, `{}`, `"é\xff"`,
	``, `{`, `1 2`, `1,"x":2`, `"unterminated`, `[1,]`, `nul`, `{"a":1}}`}

// TestEncodeBuiltValuesMatchReference compares the encodings of values built in Go, which may
// hold anything: strings to escape, invalid raw values, empty and nil slices and maps.
func TestEncodeBuiltValuesMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	g := &gen{r: r}
	raw := func() json.RawMessage {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return json.RawMessage{}
		}
		if r.IntN(3) == 0 {
			return json.RawMessage(g.any(2))
		}
		return json.RawMessage(pick(rawValues...))
	}
	extra := func() Extra {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return Extra{}
		}
		x := Extra{}
		for n := r.IntN(20); n > 0; n-- {
			x[pick(extraKeys...)+pick(trickyKeys...)[:r.IntN(2)]+pick("", "", "1", "2")] = raw()
		}
		return x
	}
	str := func() string {
		if r.IntN(2) == 0 {
			return ""
		}
		return g.text()
	}
	message := func() ChatMessage {
		m := ChatMessage{Role: str(), Content: raw(), Name: str(), ToolCallID: str(), Extra: extra()}
		if r.IntN(3) == 0 {
			m.ToolCalls = []ToolCall{}
			for n := r.IntN(3); n > 0; n-- {
				c := ToolCall{ID: str(), Type: str(), Function: FunctionCall{Name: str(), Arguments: str()}}
				if r.IntN(3) == 0 {
					i := r.IntN(5) - 1
					c.Index = &i
				}
				m.ToolCalls = append(m.ToolCalls, c)
			}
		}
		return m
	}
	tool := func() ToolDef {
		d := ToolDef{Type: str(), Function: FunctionDef{Name: str(), Description: str(), Parameters: raw()}, Extra: extra()}
		if r.IntN(3) == 0 {
			b := r.IntN(2) == 0
			d.Function.Strict = &b
		}
		return d
	}
	for range 3000 {
		req := ChatRequest{Model: str(), ToolChoice: raw(), Stream: r.IntN(2) == 0, Extra: extra()}
		if r.IntN(4) > 0 {
			req.Messages = []ChatMessage{}
			for n := r.IntN(4); n > 0; n-- {
				req.Messages = append(req.Messages, message())
			}
		}
		if r.IntN(2) == 0 {
			req.Tools = []ToolDef{}
			for n := r.IntN(3); n > 0; n-- {
				req.Tools = append(req.Tools, tool())
			}
		}
		if r.IntN(3) == 0 {
			req.StreamOptions = &StreamOptions{IncludeUsage: r.IntN(2) == 0}
		}
		if r.IntN(3) == 0 {
			n := r.IntN(100000) - 5
			req.MaxTokens = &n
		}
		checkEncode(t, kinds[0], req)
		checkEncode(t, kinds[1], message())
		checkEncode(t, kinds[2], tool())

		resp := ChatResponse{ID: str(), Object: str(), Created: r.Int64N(1<<40) - 3, Model: str(), Extra: extra()}
		if r.IntN(4) > 0 {
			resp.Choices = []Choice{}
			for n := r.IntN(3); n > 0; n-- {
				resp.Choices = append(resp.Choices, Choice{Index: r.IntN(3), Message: message(), FinishReason: str(), Logprobs: raw()})
			}
		}
		if r.IntN(2) == 0 {
			resp.Usage = &Usage{PromptTokens: r.IntN(1000), CompletionTokens: r.IntN(1000), TotalTokens: -r.IntN(3)}
			if r.IntN(2) == 0 {
				resp.Usage.PromptTokensDetails = &PromptTokensDetails{CachedTokens: r.IntN(100), AudioTokens: r.IntN(3)}
			}
			if r.IntN(2) == 0 {
				resp.Usage.CompletionTokensDetails = &CompletionTokensDetails{ReasoningTokens: r.IntN(100), AudioTokens: r.IntN(3),
					AcceptedPredictionTokens: r.IntN(3), RejectedPredictionTokens: r.IntN(3)}
			}
		}
		checkEncode(t, kinds[3], resp)
	}
}

// FuzzDecode compares the decoders, and then the encoders, on any input, as each of the types.
func FuzzDecode(f *testing.F) {
	g := &gen{r: rand.New(rand.NewPCG(3, 3)), odd: 0.1}
	for _, k := range kinds {
		for range 10 {
			f.Add([]byte(k.generate(g)))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, k := range kinds {
			checkDecode(t, k, b)
		}
	})
}

// TestDeepNesting checks input deeper than the fast decoder follows, and deeper than
// encoding/json accepts.
func TestDeepNesting(t *testing.T) {
	for _, depth := range []int{900, 1001, 5000, 9998, 10001} {
		content := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		doc := `{"model":"m","messages":[{"role":"user","content":` + content + `,"x":` + content + `}]}`
		checkDecode(t, kinds[0], []byte(doc))
		checkEncode(t, kinds[1], ChatMessage{Role: "user", Content: json.RawMessage(content)})
		checkEncode(t, kinds[0], ChatRequest{Messages: []ChatMessage{{Role: "user", Extra: Extra{"x": json.RawMessage(content)}}}})
	}
}

// FuzzScanner compares the scanner's pieces with encoding/json: appendRaw with the encoding of a
// RawMessage, unquote with the decoding of a string, appendString with the encoding of one.
func FuzzScanner(f *testing.F) {
	for _, s := range append(rawValues, pieces...) {
		f.Add([]byte(s))
	}
	f.Add([]byte(`"a\u00e9\ud83d\ude00\ud800\u2028<>&\/\b\f\n\r\t\\\""`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 0 {
			got, ok := appendRaw([]byte("x"), b)
			want, err := json.Marshal(json.RawMessage(b))
			deep := bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) > maxDepth // refused, rightly
			if ok != (err == nil) && !(err == nil && deep) || ok && string(got) != "x"+string(want) {
				t.Fatalf("appendRaw(%q) = %q %v, encoding/json %q %v", b, got, ok, want, err)
			}
		}
		b = bytes.TrimRight(b, " \t\r\n")
		s := scanner{data: b}
		if len(b) == 0 || b[0] != '"' {
			// str starts at a quote
		} else if plain, ok := s.str(); ok && s.pos == len(b) {
			var want string
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatalf("scanner accepts %q, encoding/json: %v", b, err)
			}
			if got := unquote(b); got != want {
				t.Fatalf("unquote(%q) = %q, want %q", b, got, want)
			}
			if plain && want != string(b[1:len(b)-1]) {
				t.Fatalf("%q is not plain", b)
			}
		} else if json.Valid(b) {
			t.Fatalf("scanner refuses %q", b)
		}
		want, _ := json.Marshal(string(b))
		if got := appendString(nil, string(b)); string(got) != string(want) {
			t.Fatalf("appendString(%q) = %q, want %q", b, got, want)
		}
	})
}
