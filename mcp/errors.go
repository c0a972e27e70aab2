package mcp

import (
	"context"
	"errors"

	"github.com/hippocam/hippocam"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The one mapping of the project's errors to MCP (hippocam's error codes: error.go). A tool's
// failure is a tool error, which the client's model reads: its text is "CODE: message", CODE the
// project's code (invalid, not_found, conflict, unavailable…). A resource's failure is a JSON-RPC
// error: the SDK's "Resource not found" for ENOTFOUND (the answer for a resource that exists
// nowhere and for one of another tenant alike), invalid params for EINVALID, an internal error
// otherwise. Hippocam's own failures (EINTERNAL) are logged and shown only as "internal error".

// Failure is a failed call as the client sees it.
type Failure struct {
	Code    string
	Message string
}

// Error implements the error interface: the text of the tool error.
func (f *Failure) Error() string { return f.Code + ": " + f.Message }

// failure maps err to what the client may see, logging what it may not.
func (s *Server) failure(op string, err error) *Failure {
	f := &Failure{Code: hippocam.ErrorCode(err), Message: hippocam.ErrorMessage(err)}
	if f.Code == hippocam.EINTERNAL {
		s.log.Error("mcp: a call failed", logCall, op, logError, err)
	}
	return f
}

// toolError is the error a tool handler returns for err: the SDK makes it the tool error.
func (s *Server) toolError(tool string, err error) error {
	return s.failure(tool, err)
}

// resourceError is the JSON-RPC error of a resource read that failed with err.
func (s *Server) resourceError(uri string, err error) error {
	f := s.failure("read "+uri, err)
	switch f.Code {
	case hippocam.ENOTFOUND:
		return sdk.ResourceNotFoundError(uri)
	case hippocam.EINVALID:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: f.Error()}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: f.Error()}
}

// argumentErrors gives the tool errors the SDK makes itself, for arguments that break a tool's
// input schema or do not decode, the project's code too: "invalid: " and the SDK's reason.
func argumentErrors(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		r, ok := res.(*sdk.CallToolResult)
		if err != nil || !ok || !r.IsError || r.GetError() == nil || errors.As(r.GetError(), new(*Failure)) {
			return res, err
		}
		r.Content = []sdk.Content{&sdk.TextContent{Text: hippocam.EINVALID + ": " + r.GetError().Error()}}
		return r, nil
	}
}

// sessionNotFound is the one answer for a session the tenant does not have, whether it does not
// exist or belongs to another tenant; it reads as sessions.Service.EndTask's.
func sessionNotFound(id string) error {
	return hippocam.Errorf(hippocam.ENOTFOUND, "session %q not found", id)
}
