package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/mcp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// complete asks for the completions of the expansion template's argument.
func complete(cs *sdk.ClientSession, ref *sdk.CompleteReference, arg, value string) (*sdk.CompleteResult, error) {
	return cs.Complete(context.Background(), &sdk.CompleteParams{Ref: ref, Argument: sdk.CompleteParamsArgument{Name: arg, Value: value}})
}

var expandRef = &sdk.CompleteReference{Type: "ref/resource", URI: mcp.ExpandTemplate}

// The expansion template's {id} completes to the tenant's own sessions: those beginning with what
// was typed (case aside) first, then those holding it elsewhere; never another tenant's.
func TestCompleteSessionIDs(t *testing.T) {
	w := newWorld(t)
	for _, id := range []string{"visit-1", "Visit-2", "audit-visit"} {
		w.agent("acme", id).say("!say hello")
	}
	w.agent("other", "visit-theirs").say("!say hello")
	cs := w.client("acme")
	if caps := cs.InitializeResult().Capabilities; caps.Completions == nil {
		t.Fatalf("the completions capability is not declared: %+v", caps)
	}
	for _, c := range []struct {
		typed string
		want  []string
	}{
		{"vis", []string{"Visit-2", "visit-1", "audit-visit"}},
		{"VISIT-1", []string{"visit-1"}},
		{"", []string{"audit-visit", "Visit-2", "visit-1"}},
		{"aud", []string{"audit-visit"}},
		{"theirs", []string{}},
	} {
		res, err := complete(cs, expandRef, "id", c.typed)
		if err != nil {
			t.Fatalf("%q: %v", c.typed, err)
		}
		got := res.Completion
		if !slices.Equal(got.Values, c.want) || got.Total != len(c.want) || got.HasMore {
			t.Errorf("%q completes to %+v, want %q (total %d, no more)", c.typed, got, c.want, len(c.want))
		}
	}
}

// At most 100 values, with the total and hasMore saying there were more.
func TestCompleteBounded(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	for i := range 130 {
		if err := w.store.CreateSession(ctx, &hippocam.Session{Tenant: "acme", ID: fmt.Sprintf("s%03d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	cs := w.client("acme")
	res, err := complete(cs, expandRef, "id", "s")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Completion; len(got.Values) != mcp.MaxCompletions || got.Total != 130 || !got.HasMore {
		t.Fatalf("130 sessions complete to %d values, total %d, hasMore %v; want 100, 130, true", len(got.Values), got.Total, got.HasMore)
	}
	res, err = complete(cs, expandRef, "id", "s12")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Completion; len(got.Values) != 10 || got.Total != 10 || got.HasMore {
		t.Fatalf("s12 completes to %+v, want the 10 sessions s120…s129", got)
	}
}

// What has no completion is invalid params, as the protocol asks: a prompt (Hippocam offers
// none), another template or resource, another argument.
func TestCompleteRefused(t *testing.T) {
	w := newWorld(t)
	cs := w.client("acme")
	for _, c := range []struct {
		ref *sdk.CompleteReference
		arg string
	}{
		{&sdk.CompleteReference{Type: "ref/prompt", Name: "summarize"}, "topic"},
		{&sdk.CompleteReference{Type: "ref/resource", URI: mcp.LessonsURI}, "id"},
		{&sdk.CompleteReference{Type: "ref/resource", URI: "hippocam://clusters/{id}"}, "id"},
		{expandRef, "session"},
	} {
		_, err := complete(cs, c.ref, c.arg, "x")
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%+v %s: %v, want invalid params", c.ref, c.arg, err)
		}
	}
}
