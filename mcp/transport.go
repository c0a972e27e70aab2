package mcp

import (
	"context"
	"errors"
	"io"
	"net/http"

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
func (s *Server) ServeStdio(ctx context.Context, tenant string, in io.Reader, out io.Writer) error {
	err := s.Serve(ctx, tenant, &sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// HTTPHandler serves MCP over Streamable HTTP for requests whose context names their tenant
// (WithTenant: the caller authenticates every request first; a request without a tenant is a
// 400). It runs stateless: every HTTP request is one exchange with the server of the tenant it
// was authenticated as, so an MCP session id never carries a tenant from one request to the
// next, and any replica can answer any request. Answers are JSON (no event streams: the server
// sends nothing unasked). Bodies are bounded by maxBody bytes.
func (s *Server) HTTPHandler(maxBody int64) http.Handler {
	return sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		tenant, ok := tenantOf(r.Context())
		if !ok {
			return nil
		}
		return s.For(tenant)
	}, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, Logger: s.log, MaxRequestBodyBytes: maxBody})
}
