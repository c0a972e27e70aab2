package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxCompletions is the most values one completion/complete answer lists, the protocol's bound.
const MaxCompletions = 100

// complete answers completion/complete: the values an argument of a resource template may take.
// The session expansion's {id} completes to the ids of the tenant's sessions: those that begin
// with what the client typed (case aside) first, then those that hold it elsewhere, each group
// latest first. Hippocam has no prompts, and no other template: a prompt, another URI or another
// argument is invalid params.
func (t *tenantServer) complete(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	ref, arg := req.Params.Ref, req.Params.Argument
	switch {
	case ref.Type == "ref/prompt":
		return nil, invalidParams(fmt.Sprintf("unknown prompt %q: Hippocam offers no prompts", ref.Name))
	case ref.Type != "ref/resource" || ref.URI != ExpandTemplate:
		return nil, invalidParams(fmt.Sprintf("no resource template %q: the only one is %s", ref.URI, ExpandTemplate))
	case arg.Name != "id":
		return nil, invalidParams(fmt.Sprintf("%s has no argument %q: its only argument is id", ExpandTemplate, arg.Name))
	}
	infos, err := t.cfg.Store.Sessions(ctx, t.tenant)
	if err != nil {
		return nil, t.resourceError("completion/complete", err)
	}
	typed := strings.ToLower(arg.Value)
	var first, rest []string
	for _, info := range infos {
		id := strings.ToLower(info.ID)
		switch {
		case strings.HasPrefix(id, typed):
			first = append(first, info.ID)
		case strings.Contains(id, typed):
			rest = append(rest, info.ID)
		}
	}
	values := append(first, rest...)
	res := &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: values, Total: len(values)}}
	if len(values) > MaxCompletions {
		res.Completion.Values, res.Completion.HasMore = values[:MaxCompletions], true
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	return res, nil
}

// invalidParams is the JSON-RPC error of a request whose parameters the server cannot serve.
func invalidParams(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}
