package openai_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// collect returns a CompleteStream callback that records the pieces.
func collect(pieces *[]string) func(string) error {
	return func(s string) error {
		*pieces = append(*pieces, s)
		return nil
	}
}

func TestCompleteStream(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) { writeEvents(w, parallelCalls...) }, nil)
		var pieces []string
		resp, err := c.CompleteStream(context.Background(), userRequest("read both"), collect(&pieces))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(pieces, "|") != "Reading |both." || resp.Message.Content != "Reading both." {
			t.Errorf("pieces %q, content %q", pieces, resp.Message.Content)
		}
		if len(resp.Message.ToolCalls) != 2 || resp.Message.ToolCalls[1].Arguments != `{"path":"b.csv"}` || resp.FinishReason != "tool_calls" {
			t.Errorf("calls %+v, finish %q", resp.Message.ToolCalls, resp.FinishReason)
		}
		if resp.Usage != (hippocam.CallUsage{Input: 900, CachedInput: 512, Output: 40}) {
			t.Errorf("usage %+v", resp.Usage)
		}
	})

	// A stream that breaks after its role chunk, before any text, is tried again; the pieces
	// come once.
	t.Run("BreakBeforeTextIsRetried", func(t *testing.T) {
		var calls atomic.Int32
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				writeEvents(w, parallelCalls[0])
				panic(http.ErrAbortHandler)
			}
			writeEvents(w, parallelCalls...)
		}, nil)
		var pieces []string
		resp, err := c.CompleteStream(context.Background(), userRequest("x"), collect(&pieces))
		if err != nil || calls.Load() != 2 || strings.Join(pieces, "") != "Reading both." || resp.Message.Content != "Reading both." {
			t.Fatalf("attempts %d, pieces %q, err %v", calls.Load(), pieces, err)
		}
	})

	t.Run("ErrorEventBeforeTextIsRetried", func(t *testing.T) {
		var calls atomic.Int32
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				writeEvents(w, parallelCalls[0], `data: {"error":{"message":"overloaded","type":"server_error"}}`+"\n\n")
				return
			}
			writeEvents(w, parallelCalls...)
		}, nil)
		var pieces []string
		_, err := c.CompleteStream(context.Background(), userRequest("x"), collect(&pieces))
		if err != nil || calls.Load() != 2 || strings.Join(pieces, "") != "Reading both." {
			t.Fatalf("attempts %d, pieces %q, err %v", calls.Load(), pieces, err)
		}
	})

	t.Run("ErrBreakAfterText", func(t *testing.T) {
		var calls atomic.Int32
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			writeEvents(w, parallelCalls[:2]...)
			panic(http.ErrAbortHandler)
		}, nil)
		var pieces []string
		_, err := c.CompleteStream(context.Background(), userRequest("x"), collect(&pieces))
		if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE || calls.Load() != 1 || strings.Join(pieces, "|") != "Reading " {
			t.Fatalf("attempts %d, pieces %q, err %v; want one attempt and EUNAVAILABLE", calls.Load(), pieces, err)
		}
	})

	t.Run("ErrCallback", func(t *testing.T) {
		var calls atomic.Int32
		c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			writeEvents(w, parallelCalls...)
		}, nil)
		stop := errors.New("client gone")
		n := 0
		_, err := c.CompleteStream(context.Background(), userRequest("x"), func(string) error { n++; return stop })
		if !errors.Is(err, stop) || n != 1 || calls.Load() != 1 {
			t.Fatalf("err %v after %d pieces and %d attempts; want the callback's error after 1, no retry", err, n, calls.Load())
		}
	})
}

// The simulated model's streamed endpoint gives, piece by piece, the answer its plain endpoint
// gives whole.
func TestCompleteStreamSim(t *testing.T) {
	srv := httptest.NewServer(sim.New(tokenizer.MustDefault()).Handler())
	t.Cleanup(srv.Close)
	cfg := openai.DefaultConfig()
	cfg.BaseURL, cfg.Model = srv.URL+"/v1", "hippocam-sim"
	c, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req := userRequest("!say The report, in full.\n!pad 120")
	whole, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var pieces []string
	streamed, err := c.CompleteStream(context.Background(), req, collect(&pieces))
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Message.Content) <= 64 || len(pieces) < 2 || strings.Join(pieces, "") != whole.Message.Content || streamed.Message.Content != whole.Message.Content {
		t.Errorf("streamed %q in %d pieces, whole %q", streamed.Message.Content, len(pieces), whole.Message.Content)
	}
	if streamed.Usage != whole.Usage || streamed.FinishReason != whole.FinishReason {
		t.Errorf("streamed usage %+v finish %q, whole %+v %q", streamed.Usage, streamed.FinishReason, whole.Usage, whole.FinishReason)
	}
}
