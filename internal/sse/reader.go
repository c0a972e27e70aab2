package sse

import (
	"bufio"
	"bytes"
	"io"
)

// Event is one server-sent event as a Reader dispatches it.
type Event struct {
	// Name is the event's type (its "event" field), empty for the default type, "message".
	Name string
	// Data is the event's data lines joined by "\n". It is valid only until the next call of
	// Reader.Next.
	Data []byte
	// ID is the last event id the stream set, as of this event (the "id" field persists
	// across events, as the standard says).
	ID string
}

// Reader reads server-sent events by the rules of the WHATWG event-stream format: lines end in
// CRLF, LF or CR; a line starting with ':' is a comment; "field: value" lines (one space after
// the colon is dropped, a line without a colon is a field with an empty value) set the event's
// fields; a blank line dispatches the event. "data" lines accumulate, "event" names the event,
// "id" sets the last event id (unless the value holds NUL); "retry" and unknown fields are
// ignored. An event with no data line is not dispatched. A Reader is not safe for concurrent
// use.
type Reader struct {
	// Check, when set, sees every line but the blank ones before the reader applies it (a
	// checker of a stream's exact form rejects what the standard lets pass); an error it
	// returns ends the stream with that error.
	Check func(line []byte) error

	br     *bufio.Reader
	line   []byte
	data   []byte
	name   string
	id     string
	hasDat bool
	skipLF bool // the last line ended with CR: a LF that follows belongs to it
	begun  bool // the stream's first bytes were read: a byte order mark there is dropped
	err    error
}

// NewReader returns a Reader over r, buffering 64 KiB at a time.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next event. At the end of the stream it returns the error that ended it:
// io.EOF when the stream ended cleanly. When the stream ends inside an event (data lines read,
// not the blank line that ends it), Next returns that event, with a non-nil Data, together
// with the error: the standard drops such an event, a caller may still use it.
func (r *Reader) Next() (Event, error) {
	if !r.begun {
		r.begun = true
		if b, err := r.br.Peek(3); err == nil && string(b) == "\ufeff" {
			r.br.Discard(3) // the standard ignores one leading UTF-8 byte order mark
		}
	}
	for {
		line, err := r.readLine()
		if err != nil {
			r.err = err
			if r.hasDat {
				return r.dispatch(), err
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if r.hasDat {
				return r.dispatch(), nil
			}
			r.name = ""
			continue
		}
		if r.Check != nil {
			if err := r.Check(line); err != nil {
				r.err = err
				return Event{}, err
			}
		}
		r.field(line)
	}
}

// field applies one non-blank line.
func (r *Reader) field(line []byte) {
	if line[0] == ':' {
		return // a comment
	}
	name, value, found := bytes.Cut(line, []byte{':'})
	if found {
		value = bytes.TrimPrefix(value, []byte{' '})
	}
	switch string(name) {
	case "data":
		if r.hasDat {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.hasDat = true
	case "event":
		r.name = string(value)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.id = string(value)
		}
	}
}

// dispatch returns the event read so far and starts the next.
func (r *Reader) dispatch() Event {
	ev := Event{Name: r.name, Data: r.data, ID: r.id}
	if ev.Data == nil {
		ev.Data = []byte{}
	}
	r.name, r.data, r.hasDat = "", r.data[:0], false
	return ev
}

// readLine returns the next line without its end (CRLF, LF or CR). A last line without an end
// is returned when the stream ends after it; the error comes on the next call.
func (r *Reader) readLine() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	r.line = r.line[:0]
	for {
		if r.skipLF {
			b, err := r.br.ReadByte()
			if err != nil {
				return r.end(err)
			}
			r.skipLF = false
			if b != '\n' {
				_ = r.br.UnreadByte()
			}
		}
		n := r.br.Buffered()
		if n == 0 {
			if _, err := r.br.Peek(1); err != nil {
				return r.end(err)
			}
			n = r.br.Buffered()
		}
		chunk, _ := r.br.Peek(n)
		i := lineEnd(chunk)
		if i < 0 {
			r.line = append(r.line, chunk...)
			_, _ = r.br.Discard(n)
			continue
		}
		r.line = append(r.line, chunk[:i]...)
		r.skipLF = chunk[i] == '\r'
		_, _ = r.br.Discard(i + 1)
		return r.line, nil
	}
}

// end handles the end of the stream while reading a line: a last line without an end is
// returned first.
func (r *Reader) end(err error) ([]byte, error) {
	if len(r.line) > 0 {
		r.err = err
		return r.line, nil
	}
	return nil, err
}
