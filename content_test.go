package hippocam

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// slowCanonicalJSON is CanonicalJSON without its shortcut: decode, then json.Marshal.
func slowCanonicalJSON(text string) string {
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return text
	}
	b, err := json.Marshal(v)
	if err != nil {
		return text
	}
	return string(b)
}

// jsonGen writes JSON texts, canonical or nearly so, with the spellings that separate the two.
type jsonGen struct{ r *rand.Rand }

func (g *jsonGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

func (g *jsonGen) str() string {
	var b strings.Builder
	b.WriteByte('"')
	for range g.r.IntN(5) {
		b.WriteString(g.pick("a", "Z", " ", "é", "😀", "\u2028", "<", ">", "&", "\x7f", "\xff", "\ufffd",
			`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u0000`, `\u001f`, `\u0008`, `\u000a`, `\u003c`, `\u003C`,
			`\u003e`, `\u0026`, `\u2028`, `\u2029`, `\u0041`, `\u00e9`, `\ud83d\ude00`, `\ud800`, `\x`, "\n"))
	}
	b.WriteByte('"')
	return b.String()
}

func (g *jsonGen) value(depth int) string {
	ws := func() string { return g.pick("", "", "", "", " ", "\n") }
	switch n := g.r.IntN(10); {
	case n == 0 && depth < 4:
		var members []string
		keys := []string{`"a"`, `"b"`, `"ab"`, `"B"`, `""`, `"a\u0062"`, `"<"`, `"é"`}
		for range g.r.IntN(4) {
			members = append(members, ws()+keys[g.r.IntN(len(keys))]+ws()+":"+ws()+g.value(depth+1))
		}
		return "{" + strings.Join(members, ",") + ws() + "}"
	case n == 1 && depth < 4:
		var elems []string
		for range g.r.IntN(4) {
			elems = append(elems, ws()+g.value(depth+1))
		}
		return "[" + strings.Join(elems, ",") + "]"
	case n < 5:
		return g.str()
	case n < 8:
		return g.pick("0", "-0", "1", "12.50", "1e5", "1E+2", "-3.0e-1", "01", "1.", ".5", "-", "+1", "1e", "123456789012345678901234567890")
	default:
		return g.pick("true", "false", "null", "nul", "tru")
	}
}

// TestCanonicalJSONShortcut checks that the shortcut changes nothing: on every generated text,
// CanonicalJSON gives what decoding and encoding give. It also checks that the shortcut is
// taken for texts already canonical, which is the point of it.
func TestCanonicalJSONShortcut(t *testing.T) {
	g := &jsonGen{r: rand.New(rand.NewPCG(5, 6))}
	shortcuts := 0
	for range 200000 {
		text := g.value(0)
		if g.r.IntN(20) == 0 {
			text = g.pick(" ", "", "\t") + text + g.pick("", " ", "x", "]", "{}")
		}
		want := slowCanonicalJSON(text)
		if got := CanonicalJSON(text); got != want {
			t.Fatalf("CanonicalJSON(%q) = %q, want %q", text, got, want)
		}
		if isCanonicalJSON(text) {
			shortcuts++
		}
	}
	for _, text := range []string{`{"path":"src/a.go"}`, `{"a":[1,2.5,{"b":null}],"c":"x\ny \"q\" \u003c"}`, `[]`, `"é😀"`} {
		if !isCanonicalJSON(text) {
			t.Errorf("%q is canonical, but the shortcut is not taken", text)
		}
	}
	if shortcuts < 10000 {
		t.Errorf("the shortcut was taken %d times in 200,000 texts", shortcuts)
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"b":1,"a":2}`, `"\u003c"`, `[1,"x"]`, `{"a":{"a":[]}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := CanonicalJSON(text), slowCanonicalJSON(text); got != want {
			t.Fatalf("CanonicalJSON(%q) = %q, want %q", text, got, want)
		}
	})
}

// legacyTranscriptHash is TranscriptHash as it was first written; stored sessions hold its
// values, so the hash must not change.
func legacyTranscriptHash(prev string, m *Message) string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(prev)
	field(string(m.Role))
	field(m.Content)
	field(m.ToolCallID)
	for _, c := range m.ToolCalls {
		field(c.ID)
		field(c.Name)
		field(slowCanonicalJSON(c.Arguments))
	}
	for _, p := range m.Parts {
		field(p.Type)
		field(p.MediaType)
		field(p.Data)
		field(p.URL)
		field(p.FileID)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// TestTranscriptHashUnchanged compares TranscriptHash and TranscriptChain with the first
// implementation on generated messages.
func TestTranscriptHashUnchanged(t *testing.T) {
	g := &jsonGen{r: rand.New(rand.NewPCG(7, 8))}
	var msgs []Message
	for range 2000 {
		m := Message{Role: Role(g.pick("user", "assistant", "tool")), Content: g.str(), ToolCallID: g.pick("", "c1")}
		for range g.r.IntN(3) {
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: g.pick("c1", ""), Name: g.pick("read", "run"), Arguments: g.value(0)})
		}
		for range g.r.IntN(2) {
			m.Parts = append(m.Parts, Part{Type: PartImage, MediaType: g.pick("", "image/png"), Data: g.str(), URL: g.pick("", "https://x"), FileID: g.pick("", "f")})
		}
		msgs = append(msgs, m)
	}
	chain := TranscriptChain("", msgs)
	h := ""
	for i := range msgs {
		h = legacyTranscriptHash(h, &msgs[i])
		if got := TranscriptHash(chain[i], &msgs[i]); got != h || chain[i+1] != h {
			t.Fatalf("message %d: TranscriptHash %s, chain %s, first implementation %s", i, got, chain[i+1], h)
		}
	}
}

// TestTranscriptChain checks the chain against TranscriptHash step by step, and TranscriptHash
// against the value it has always had for one message (stored sessions hold such hashes).
func TestTranscriptChain(t *testing.T) {
	msgs := []Message{
		{Role: RoleUser, Content: "hello"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "read", Arguments: `{ "path": "a.go" }`}}},
		{Role: RoleTool, ToolCallID: "c1", Content: "package a\n", Parts: []Part{{Type: PartImage, MediaType: "image/png", Data: "AAAA"}}},
		{Role: RoleAssistant, Content: strings.Repeat("long ", 5000)},
	}
	for _, prev := range []string{"", "0123456789abcdef0123456789abcdef"} {
		chain := TranscriptChain(prev, msgs)
		if len(chain) != len(msgs)+1 || chain[0] != prev {
			t.Fatalf("chain %q", chain)
		}
		h := prev
		for i := range msgs {
			h = TranscriptHash(h, &msgs[i])
			if chain[i+1] != h {
				t.Fatalf("chain[%d] = %s, TranscriptHash gives %s", i+1, chain[i+1], h)
			}
		}
	}
	if got, want := TranscriptHash("", &msgs[0]), "89ef9bb0eed67eff73e1d52183866b95"; got != want {
		t.Errorf("TranscriptHash of a user message = %s, want %s (the stored format changed)", got, want)
	}
	if got := FramingHash(nil); got != "" {
		t.Errorf("FramingHash(nil) = %q", got)
	}
	if got, want := FramingHash(msgs[:2]), TranscriptHash(TranscriptHash("", &msgs[0]), &msgs[1]); got != want {
		t.Errorf("FramingHash = %s, want %s", got, want)
	}
}

// TestCloneSharesContextCopyOnWrite checks that a clone and its session never see each other's
// changes to the context, although the clone does not copy it.
func TestCloneSharesContextCopyOnWrite(t *testing.T) {
	s := &Session{Context: make([]Message, 3, 8)}
	for i := range s.Context {
		s.Context[i] = Message{ID: string(rune('a' + i))}
	}
	c := s.Clone()
	if &c.Context[0] != &s.Context[0] {
		t.Fatal("the clone copied the context")
	}
	c.Context = append(c.Context, Message{ID: "from clone"})
	c.Context[0].Content = "changed by the clone after its append"
	s.Context = append(s.Context, Message{ID: "from session"})
	if s.Context[0].Content != "" || s.Context[3].ID != "from session" || len(s.Context) != 4 {
		t.Errorf("the session sees the clone's changes: %+v", s.Context)
	}
	if c.Context[3].ID != "from clone" || len(c.Context) != 4 {
		t.Errorf("the clone sees the session's append: %+v", c.Context)
	}
}

// legacyCheckText is CheckText as first written, byte by byte.
func legacyCheckText(body []byte) error {
	if !utf8.Valid(body) {
		return Errorf(EINVALID, "the request body is not valid UTF-8")
	}
	for i := 0; i+5 < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if body[i+1] != 'u' {
			i++
			continue
		}
		r := hex4(body[i+2 : i+6])
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if i+11 < len(body) && body[i+6] == '\\' && body[i+7] == 'u' {
				if lo := hex4(body[i+8 : i+12]); lo >= 0xDC00 && lo <= 0xDFFF {
					i += 11
					continue
				}
			}
			return Errorf(EINVALID, "the request body holds an unpaired UTF-16 surrogate escape at byte %d", i)
		case r >= 0xDC00 && r <= 0xDFFF:
			return Errorf(EINVALID, "the request body holds an unpaired UTF-16 surrogate escape at byte %d", i)
		}
		i += 5
	}
	return nil
}

// TestCheckTextUnchanged compares CheckText with its first implementation on bodies made of the
// pieces that matter to it.
func TestCheckTextUnchanged(t *testing.T) {
	g := &jsonGen{r: rand.New(rand.NewPCG(9, 10))}
	for range 100000 {
		var b strings.Builder
		for range g.r.IntN(12) {
			b.WriteString(g.pick("a", `\`, `\\`, `\u`, `\ud83d`, `\ude00`, `\ud83d\ude00`, `\u0041`, `\uDBFF\uDFFF`, `\ud800x`, "é", "\xff", `"`, "0123", `\n`))
		}
		body := []byte(b.String())
		if got, want := fmt.Sprint(CheckText(body)), fmt.Sprint(legacyCheckText(body)); got != want {
			t.Fatalf("CheckText(%q) = %s, want %s", body, got, want)
		}
	}
}
