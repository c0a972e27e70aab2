package learn_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// recorder keeps every request; with refuse it refuses the structured ones as a client does
// once its upstream refused one.
type recorder struct {
	inner  hippocam.Model
	refuse bool
	mu     sync.Mutex
	reqs   []*hippocam.Request
}

func (r *recorder) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	if r.refuse && req.Structured != nil {
		return nil, &hippocam.StructuredRefusal{Upstream: "http://upstream.test/v1", Model: "m", Remembered: true}
	}
	return r.inner.Complete(ctx, req)
}

// A contract call offers no tools and asks for its answer natively, named after its role, with
// the schema left out of the prose; refused, it is sent again with the schema in the system
// message; in prose mode it is never native.
func TestCallStructured(t *testing.T) {
	route := func(env *learn.Env) {
		t.Helper()
		d, err := learn.Route(context.Background(), env, task("Ledger check\nPlease look."), []hippocam.MemorySystem{system{"icl", "the icl system"}}, nil)
		if err != nil || d.System != "icl" {
			t.Fatalf("Route: %+v %v", d, err)
		}
	}
	inner := sim.New(tokenizer.MustDefault()).InProcess()
	rec := &recorder{inner: inner}
	route(&learn.Env{Model: rec})
	if len(rec.reqs) != 1 {
		t.Fatalf("%d requests", len(rec.reqs))
	}
	req := rec.reqs[0]
	if s := req.Structured; s == nil || s.Name != string(hippocam.CallRouter) || !s.Strict || len(req.Tools) != 0 || req.ToolChoice != "" ||
		strings.Contains(req.Messages[0].Content, "following this schema") {
		t.Fatalf("native request: structured %+v, %d tools, choice %q", req.Structured, len(req.Tools), req.ToolChoice)
	}

	rec = &recorder{inner: inner, refuse: true}
	route(&learn.Env{Model: rec})
	if len(rec.reqs) != 2 || rec.reqs[1].Structured != nil || !strings.Contains(rec.reqs[1].Messages[0].Content, "following this schema") ||
		rec.reqs[1].Messages[1].Content != rec.reqs[0].Messages[1].Content {
		t.Fatalf("after a refusal: %d requests, the second structured %v", len(rec.reqs), rec.reqs[len(rec.reqs)-1].Structured)
	}

	rec = &recorder{inner: inner}
	route(&learn.Env{Model: rec, Structured: hippocam.StructuredProse})
	if rec.reqs[0].Structured != nil || len(rec.reqs[0].Tools) != 0 {
		t.Fatal("prose mode asked natively")
	}
}
