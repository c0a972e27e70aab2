package sse

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// readAll reads every event of a stream, a partial last one included.
func readAll(t *testing.T, s string) ([]Event, error) {
	t.Helper()
	r := NewReader(strings.NewReader(s))
	var out []Event
	for {
		ev, err := r.Next()
		if ev.Data != nil {
			ev.Data = bytes.Clone(ev.Data)
			out = append(out, ev)
		}
		if err != nil {
			return out, err
		}
	}
}

func TestReader(t *testing.T) {
	stream := "event: x\ndata: one\ndata: two\r\n\r\n: comment\n\nid: 7\ndata:three\rdata\r\rretry: 10\nunknown: y\nevent: lost\n\nevent: last\ndata:  four"
	got, err := readAll(t, stream)
	if err != io.EOF {
		t.Fatalf("err %v", err)
	}
	want := []Event{
		{Name: "x", Data: []byte("one\ntwo")},
		{Data: []byte("three\n"), ID: "7"},
		{Name: "last", Data: []byte(" four"), ID: "7"}, // cut off: returned with the error
	}
	if len(got) != len(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := range want {
		if got[i].Name != want[i].Name || string(got[i].Data) != string(want[i].Data) || got[i].ID != want[i].ID {
			t.Errorf("event %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// An empty data line dispatches an event with empty data; an event without data is dropped.
func TestReaderEmptyData(t *testing.T) {
	got, err := readAll(t, "data:\n\nevent: e\n\n")
	if err != io.EOF || len(got) != 1 || len(got[0].Data) != 0 || got[0].Name != "" {
		t.Fatalf("%q %v", got, err)
	}
}

// A read error ends the stream with that error, after the event being read.
func TestReaderError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), errReader{boom}))
	if ev, err := r.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("%q %v", ev.Data, err)
	}
	if ev, err := r.Next(); err != boom || string(ev.Data) != "b" {
		t.Fatalf("%q %v", ev.Data, err)
	}
	if _, err := r.Next(); err != boom {
		t.Fatalf("after the error: %v", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestWriter(t *testing.T) {
	rec := httptest.NewRecorder()
	w := Start(rec)
	w.Write("message_start", []byte(`{"a":1}`))
	w.Data([]byte("[DONE]"))
	w.Event("", []byte("two\nlines"))
	w.Comment("keep-alive")
	want := "event: message_start\ndata: {\"a\":1}\n\ndata: [DONE]\n\ndata: two\ndata: lines\n\n: keep-alive\n\n"
	if rec.Body.String() != want || !rec.Flushed || rec.Header().Get("Content-Type") != "text/event-stream" || rec.Code != 200 {
		t.Fatalf("%q (flushed %t, %v)", rec.Body.String(), rec.Flushed, rec.Header())
	}
	w = NewWriter(failing{})
	if w.Data([]byte("x")) == nil || w.Comment("y") == nil || w.Err() == nil {
		t.Fatal("a failed write is not reported")
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("gone") }

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want []string
	}{
		{"", 4, nil},
		{"abcdef", 4, []string{"abcd", "ef"}},
		{"aé日x", 3, []string{"aé", "日", "x"}},
		{"日本", 2, []string{"日", "本"}},
		{"\x80\x80\x80", 2, []string{"\x80", "\x80\x80"}},
		{"ab", 0, []string{"a", "b"}},
	} {
		got := Split(c.s, c.n)
		if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Errorf("Split(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

// Split's pieces join to the text, are at most n bytes unless one character is longer, and
// never cut a character of valid text.
func TestSplitProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "s")
		n := rapid.IntRange(1, 70).Draw(t, "n")
		pieces := Split(s, n)
		if strings.Join(pieces, "") != s {
			t.Fatalf("pieces %q do not join to %q", pieces, s)
		}
		for _, p := range pieces {
			if p == "" || len(p) > n && utf8.RuneCountInString(p) > 1 || !utf8.ValidString(p) {
				t.Fatalf("piece %q of %q (n %d)", p, s, n)
			}
		}
	})
}

// Whatever a Writer writes, a Reader reads back: names, data (line breaks included, CR and CRLF
// read as LF) and comments skipped, over any line ends.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		type ev struct {
			name, data string
			comment    bool
		}
		evs := rapid.SliceOf(rapid.Custom(func(t *rapid.T) ev {
			return ev{
				name:    rapid.StringMatching(`[a-z_.]{0,12}`).Draw(t, "name"),
				data:    rapid.StringMatching(`[^\r\n]{0,20}(\n[^\r\n]{0,20}){0,3}`).Draw(t, "data"),
				comment: rapid.IntRange(0, 5).Draw(t, "comment") == 0,
			}
		})).Draw(t, "events")
		var buf bytes.Buffer
		w := NewWriter(&buf)
		var want []ev
		for _, e := range evs {
			if e.comment {
				w.Comment(e.data[:strings.IndexByte(e.data+"\n", '\n')])
				continue
			}
			w.Write(e.name, []byte(e.data))
			want = append(want, e)
		}
		eol := rapid.SampledFrom([]string{"\n", "\r\n", "\r"}).Draw(t, "eol")
		stream := strings.ReplaceAll(buf.String(), "\n", eol)
		chunk := rapid.IntRange(1, 64).Draw(t, "chunk")
		r := NewReader(&chunked{s: stream, n: chunk})
		for i, e := range want {
			got, err := r.Next()
			if err != nil || got.Name != e.name || string(got.Data) != e.data {
				t.Fatalf("event %d: %q %q %v, want %q %q", i, got.Name, got.Data, err, e.name, e.data)
			}
		}
		if got, err := r.Next(); err != io.EOF || got.Data != nil {
			t.Fatalf("after the events: %q %v", got.Data, err)
		}
	})
}

// chunked reads s n bytes at a time, as a network stream arrives.
type chunked struct {
	s string
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[k:]
	return k, nil
}

func FuzzReader(f *testing.F) {
	f.Add("event: x\ndata: a\r\n\r\n:c\rdata:b\r\rid: 1\n")
	f.Fuzz(func(t *testing.T, s string) {
		r := NewReader(strings.NewReader(s))
		for range len(s) + 2 {
			ev, err := r.Next()
			if bytes.IndexAny(ev.Data, "\r") >= 0 {
				t.Fatalf("data %q holds a CR", ev.Data)
			}
			if err != nil {
				return
			}
		}
		t.Fatal("the reader does not end")
	})
}

// Data holding CR or CRLF line breaks is written as several data lines, as LF is: a reader ends
// a line at any of the three, so nothing of the data is lost or read as a field.
func TestWriterCarriageReturns(t *testing.T) {
	var buf bytes.Buffer
	if err := NewWriter(&buf).Write("", []byte("a\rb\r\nc\n\rd")); err != nil {
		t.Fatal(err)
	}
	evs, err := readAll(t, buf.String())
	if err != io.EOF || len(evs) != 1 || string(evs[0].Data) != "a\nb\nc\n\nd" {
		t.Fatalf("read back %q (%v) from %q", evs, err, buf.String())
	}
}

// A UTF-8 byte order mark that opens the stream is ignored; the first event is kept.
func TestReaderByteOrderMark(t *testing.T) {
	evs, err := readAll(t, "\ufeffdata: x\n\ndata: y\n\n")
	if err != io.EOF || len(evs) != 2 || string(evs[0].Data) != "x" || string(evs[1].Data) != "y" {
		t.Fatalf("events %q, %v", evs, err)
	}
}
