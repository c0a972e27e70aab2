package sse

import (
	"io"
	"net/http"
)

// Header starts an event stream over HTTP: it sets Content-Type: text/event-stream and
// Cache-Control: no-cache, and writes status 200.
func Header(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

// Writer writes server-sent events. Each event is one write to the underlying writer:
// "event: NAME" when it has a name, one "data: " line per line of its data, then a blank line.
// Flush pushes what was written to the client when the underlying writer is an http.Flusher.
// After the first write error every method returns that error and writes nothing. A Writer is
// not safe for concurrent use.
type Writer struct {
	w   io.Writer
	f   http.Flusher
	buf []byte
	err error
}

// NewWriter returns a Writer over w. It writes nothing yet.
func NewWriter(w io.Writer) *Writer {
	f, _ := w.(http.Flusher)
	return &Writer{w: w, f: f}
}

// Start writes the headers of an event stream (Header) and returns a Writer over w.
func Start(w http.ResponseWriter) *Writer {
	Header(w)
	return NewWriter(w)
}

// Write writes one event named name (none when name is empty: the standard's "message") with
// data, without flushing. Data holding line breaks (LF, CR or CRLF) is written as several data
// lines, which a reader joins back with "\n". It returns the first write error.
func (w *Writer) Write(name string, data []byte) error {
	if w.err != nil {
		return w.err
	}
	b := w.buf[:0]
	if name != "" {
		b = append(append(append(b, "event: "...), name...), '\n')
	}
	for {
		// A reader ends a line at LF, CR or CRLF, so each of them starts a new data line.
		end := lineEnd(data)
		if end < 0 {
			b = append(append(append(b, "data: "...), data...), '\n')
			break
		}
		b = append(append(append(b, "data: "...), data[:end]...), '\n')
		if data[end] == '\r' && end+1 < len(data) && data[end+1] == '\n' {
			end++
		}
		data = data[end+1:]
	}
	b = append(b, '\n')
	w.buf = b
	_, w.err = w.w.Write(b)
	return w.err
}

// Event writes one event, as Write, and flushes it.
func (w *Writer) Event(name string, data []byte) error {
	if err := w.Write(name, data); err != nil {
		return err
	}
	return w.Flush()
}

// Data writes one unnamed event with data and flushes it.
func (w *Writer) Data(data []byte) error { return w.Event("", data) }

// Comment writes a comment line (": text") and a blank line, and flushes: readers ignore it,
// and it keeps an idle connection from timing out.
func (w *Writer) Comment(text string) error {
	if w.err != nil {
		return w.err
	}
	w.buf = append(append(append(w.buf[:0], ": "...), text...), "\n\n"...)
	if _, w.err = w.w.Write(w.buf); w.err != nil {
		return w.err
	}
	return w.Flush()
}

// Flush sends what was written, when the underlying writer can flush, and returns the first
// write error.
func (w *Writer) Flush() error {
	if w.err == nil && w.f != nil {
		w.f.Flush()
	}
	return w.err
}

// Err returns the first write error, or nil.
func (w *Writer) Err() error { return w.err }
