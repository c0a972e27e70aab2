package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sse"
	"github.com/hippocam/hippocam/openai/wire"
)

// maxBody bounds a request body.
const maxBody = 64 << 20

// streamPiece is the most bytes of text or arguments one streamed chunk carries.
const streamPiece = 64

// Handler returns the simulation's HTTP API, OpenAI's chat-completions protocol:
//
//   - POST …/chat/completions answers a request, as one JSON body or, with "stream": true, as
//     server-sent events ending with "data: [DONE]". The call role is read from the
//     X-Hippocam-Role header (hippocam.RoleHeader); a request without it is the main model's.
//   - GET …/models lists the one model, ModelID; GET …/models/{id} describes it
//     (endpoints.go).
//   - POST …/embeddings answers deterministic vectors drawn from the text (endpoints.go).
//
// Routes match on the end of the path, so any base URL (".../v1", "/openai/v1") works. Errors
// have OpenAI's error body: 400 for malformed JSON, no messages or an unknown role, 404 for an
// unknown route, 405 for a wrong method.
func (m *Model) Handler() http.Handler { return http.HandlerFunc(m.serveHTTP) }

func (m *Model) serveHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		if r.Method != http.MethodPost {
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use POST for chat completions")
			return
		}
		m.serveChat(w, r)
	case strings.HasSuffix(path, "/responses"):
		if r.Method != http.MethodPost {
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use POST for responses")
			return
		}
		m.serveResponses(w, r)
	case strings.HasSuffix(path, "/messages"):
		if r.Method != http.MethodPost {
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use POST for messages")
			return
		}
		m.serveMessages(w, r)
	case strings.Contains(path, "/models/") && path[strings.LastIndex(path, "/models/")+len("/models/"):] != "":
		if r.Method != http.MethodGet {
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use GET to read a model")
			return
		}
		m.serveModel(w, r, path[strings.LastIndex(path, "/models/")+len("/models/"):])
	case strings.HasSuffix(path, "/embeddings"):
		if r.Method != http.MethodPost {
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use POST for embeddings")
			return
		}
		m.serveEmbeddings(w, r)
	case strings.HasSuffix(path, "/models"):
		if r.Method != http.MethodGet {
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use GET to list models")
			return
		}
		writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []modelEntry{{ID: ModelID, Object: "model", OwnedBy: "hippocam"}}})
	default:
		writeError(w, http.StatusNotFound, "invalid_request_error", fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
	}
}

type modelList struct {
	Object string       `json:"object"`
	Data   []modelEntry `json:"data"`
}

type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (m *Model) serveChat(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	role, err := callRole(strings.TrimSpace(r.Header.Get(hippocam.RoleHeader)))
	if err != nil {
		writeFailure(w, err)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "cannot read the request body: "+err.Error())
		return
	}
	var req wire.ChatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "the body is not a valid chat request: "+err.Error())
		return
	}
	resp, err := m.Complete(role, &req)
	if err != nil {
		writeFailure(w, err)
		return
	}
	if req.Stream {
		m.writeStream(r.Context(), start, w, resp, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	if m.whole(r.Context(), start, resp.Usage.CompletionTokens) != nil {
		return // the client has gone
	}
	writeJSON(w, http.StatusOK, resp)
}

// writeStream sends resp as chat.completion.chunk events: the role, the text in pieces, each tool
// call (id and name, then its arguments in pieces, all with the call's index), the finish reason
// and, if asked, a last chunk with the usage and no choices. With a latency set, the role chunk
// waits for the time to first byte, each piece of text and each whole tool call for its tokens
// to be produced; when ctx ends the stream stops where it is.
func (m *Model) writeStream(ctx context.Context, start time.Time, w http.ResponseWriter, resp *wire.ChatResponse, includeUsage bool) {
	choice := resp.Choices[0]
	text, _ := choice.Message.Text()
	textPieces := pieces(text)
	calls := make([]hippocam.ToolCall, len(choice.Message.ToolCalls))
	for i, tc := range choice.Message.ToolCalls {
		calls[i] = hippocam.ToolCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}
	}
	p := m.pace(ctx, start, resp.Usage.CompletionTokens, weigh(m.tok, textPieces, calls))
	if p.firstByte() != nil {
		return
	}
	out := sse.Start(w)
	send := func(c wire.ChatChunk) {
		b, _ := json.Marshal(c)
		_ = out.Data(b) // a write error means the client went away; the pacing notices it
	}
	chunk := func(d wire.Delta, finish *string) wire.ChatChunk {
		return wire.ChatChunk{ID: resp.ID, Object: "chat.completion.chunk", Created: resp.Created, Model: resp.Model,
			Choices: []wire.ChunkChoice{{Index: 0, Delta: d, FinishReason: finish}}}
	}
	empty := ""
	send(chunk(wire.Delta{Role: string(hippocam.RoleAssistant), Content: &empty}, nil))
	for _, piece := range textPieces {
		if p.text(piece) != nil {
			return
		}
		send(chunk(wire.Delta{Content: &piece}, nil))
	}
	for i, tc := range choice.Message.ToolCalls {
		if p.call(tc.Function.Name, tc.Function.Arguments) != nil {
			return
		}
		send(chunk(wire.Delta{ToolCalls: []wire.ToolCall{{Index: &i, ID: tc.ID, Type: "function",
			Function: wire.FunctionCall{Name: tc.Function.Name}}}}, nil))
		for _, piece := range pieces(tc.Function.Arguments) {
			send(chunk(wire.Delta{ToolCalls: []wire.ToolCall{{Index: &i, Function: wire.FunctionCall{Arguments: piece}}}}, nil))
		}
	}
	finish := choice.FinishReason
	send(chunk(wire.Delta{}, &finish))
	if includeUsage {
		last := chunk(wire.Delta{}, nil)
		last.Choices, last.Usage = []wire.ChunkChoice{}, resp.Usage
		send(last)
	}
	_ = out.Data([]byte("[DONE]"))
}

// pieces cuts s into the simulation's stream deltas: at most streamPiece bytes, never inside a
// character.
func pieces(s string) []string { return sse.Split(s, streamPiece) }

// writeFailure maps an error to its HTTP status and OpenAI error body. Internal details are not
// shown.
func writeFailure(w http.ResponseWriter, err error) {
	switch hippocam.ErrorCode(err) {
	case hippocam.EINVALID:
		writeError(w, http.StatusBadRequest, "invalid_request_error", hippocam.ErrorMessage(err))
	case hippocam.ENOTFOUND:
		writeError(w, http.StatusNotFound, "invalid_request_error", hippocam.ErrorMessage(err))
	default:
		writeError(w, http.StatusInternalServerError, "server_error", hippocam.ErrorMessage(err))
	}
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, wire.ErrorResponse{Error: wire.ErrorBody{Message: msg, Type: typ}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"internal error","type":"server_error","param":null,"code":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// Transport returns an http.RoundTripper that serves every request in-process through Handler,
// without a socket: an HTTP client given this transport talks to the simulation whatever base URL
// it uses. Without latency the whole response is produced before RoundTrip returns, streamed
// answers as one buffered body of events. With a Latency set, RoundTrip returns once the
// response's headers are written and its body delivers the events as they are produced; closing
// the body or ending the request's context stops the answer, and a body cut off that way ends
// with the context's error. RoundTrip fails only when the request's context is done before the
// headers.
func (m *Model) Transport() http.RoundTripper { return transport{m: m, h: m.Handler()} }

type transport struct {
	m *Model
	h http.Handler
}

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	if !t.m.Latency().Zero() {
		return t.roundTripStreamed(req)
	}
	in := req.Clone(req.Context())
	if in.Body == nil {
		in.Body = http.NoBody
	}
	rec := &recorder{header: http.Header{}}
	t.h.ServeHTTP(rec, in)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", rec.status, http.StatusText(rec.status)),
		StatusCode:    rec.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rec.header,
		Body:          io.NopCloser(bytes.NewReader(rec.body.Bytes())),
		ContentLength: int64(rec.body.Len()),
		Request:       req,
	}, nil
}

// roundTripStreamed serves req on a goroutine whose writes reach the response body through a
// pipe, so that a paced answer arrives piece by piece.
func (t transport) roundTripStreamed(req *http.Request) (*http.Response, error) {
	body, err := readAllBody(req.Body) // the caller may close its body once RoundTrip returns
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(req.Context())
	in := req.Clone(ctx)
	in.Body = io.NopCloser(bytes.NewReader(body))
	pr, pw := io.Pipe()
	sw := &streamWriter{header: http.Header{}, pipe: pw, ready: make(chan struct{})}
	go func() {
		t.h.ServeHTTP(sw, in)
		sw.WriteHeader(http.StatusOK) // a handler that wrote nothing answered 200 with no body
		if err := ctx.Err(); err != nil {
			pw.CloseWithError(err)
		} else {
			pw.Close()
		}
	}()
	select {
	case <-sw.ready:
	case <-ctx.Done():
		cancel()
		pr.Close()
		return nil, ctx.Err()
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", sw.status, http.StatusText(sw.status)),
		StatusCode:    sw.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        sw.sent,
		Body:          &streamBody{pipe: pr, cancel: cancel},
		ContentLength: -1,
		Request:       req,
	}, nil
}

func readAllBody(b io.Reader) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	return io.ReadAll(b)
}

// recorder is the http.ResponseWriter of Transport without latency.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

func (r *recorder) Flush() {}

// streamWriter is the http.ResponseWriter of Transport with latency: WriteHeader publishes a copy
// of the headers and the status (ready closes), and the body goes into the pipe, each write
// waiting for the reader.
type streamWriter struct {
	header http.Header
	sent   http.Header
	status int
	pipe   *io.PipeWriter
	ready  chan struct{}
}

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status, w.sent = status, w.header.Clone()
	close(w.ready)
}

func (w *streamWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pipe.Write(b)
}

// Flush does nothing: every write already waits until the reader has taken it.
func (w *streamWriter) Flush() {}

// streamBody is the response body of Transport with latency; closing it stops the handler.
type streamBody struct {
	pipe   *io.PipeReader
	cancel context.CancelFunc
}

func (b *streamBody) Read(p []byte) (int, error) { return b.pipe.Read(p) }

func (b *streamBody) Close() error {
	b.cancel()
	return b.pipe.Close()
}
