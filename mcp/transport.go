package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The transports: one connection over any SDK transport (Serve: the SDK's in-memory transports
// in tests), stdio (ServeStdio: hippocam mcp) and Streamable HTTP (HTTPHandler: /mcp in hippocam
// serve).

// Serve runs one MCP connection of tenant over t until the client closes it (nil) or ctx ends
// (ctx's error).
func (s *Server) Serve(ctx context.Context, tenant string, t sdk.Transport) error {
	return s.For(tenant).Run(ctx, t)
}

// ServeStdio runs one MCP connection of tenant over newline-delimited JSON-RPC, reading in and
// writing out (a process's stdin and stdout), until in ends (nil) or ctx ends (nil too: that is
// how the command is stopped). Nothing else may write to out.
//
// A line that is not JSON is answered with a JSON-RPC parse error (-32700) and the connection
// goes on, as the protocol asks; the SDK's transport would otherwise end the connection.
func (s *Server) ServeStdio(ctx context.Context, tenant string, in io.Reader, out io.Writer) error {
	w := &lockedWriter{w: out}
	err := s.Serve(ctx, tenant, &sdk.IOTransport{Reader: jsonLines(in, w), Writer: nopWriteCloser{w}})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// parseError is the answer to a line that is not JSON: it has no id, since none could be read.
const parseError = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON"}}` + "\n"

// jsonLines passes on the lines of in that are JSON, and answers every other non-blank line with
// a parse error on w. The reader it returns ends when in does.
func jsonLines(in io.Reader, w io.Writer) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		r := bufio.NewReader(in)
		for {
			line, err := r.ReadBytes('\n')
			if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
				if json.Valid(trimmed) {
					if _, werr := pw.Write(append(trimmed, '\n')); werr != nil {
						return // the connection is closed
					}
				} else if _, werr := io.WriteString(w, parseError); werr != nil {
					pw.CloseWithError(werr)
					return
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}

// lockedWriter makes each Write whole: the SDK writes one message per Write, and parse errors are
// written beside it.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// HTTPHandler serves MCP over Streamable HTTP for requests whose context names their tenant
// (WithTenant: the caller authenticates every request first; a request without a tenant is a
// 400). It runs stateless: every HTTP request is one exchange with the server of the tenant it
// was authenticated as, so an MCP session id never carries a tenant from one request to the
// next, and any replica can answer any request. Answers are JSON, but for subscriptions/listen
// (an event stream of its notifications). A GET that accepts an event stream opens the
// tenant's notification stream (stream.go); DELETE is 405. Both streams end when the HTTP server
// that serves them shuts down. Bodies are bounded by maxBody bytes.
func (s *Server) HTTPHandler(maxBody int64) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		tenant, ok := tenantOf(r.Context())
		if !ok {
			return nil
		}
		return s.For(tenant)
	}, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: s.log, MaxRequestBodyBytes: maxBody})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ending.ch(r) // register the server's shutdown before anything streams
		tenant, ok := tenantOf(r.Context())
		if r.Method != http.MethodGet || !ok || !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			if isListen(r, maxBody) {
				var stop func()
				r, stop = s.ending.untilEnding(r)
				defer stop()
			}
			h.ServeHTTP(w, r)
			return
		}
		if rebinding(r) {
			http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
			return
		}
		s.serveStream(w, r, tenant)
	})
}
