package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/params"
	"github.com/hippocam/hippocam/openai"
)

func TestReasoningModel(t *testing.T) {
	for model, want := range map[string]bool{
		"o1": true, "o1-preview": true, "o3-mini": true, "o4-mini-2025-04-16": true, "openai/o3": true,
		"gpt-5": true, "gpt-5-mini": true, "GPT-5.1-codex": true, "gpt-10": true,
		"gpt-4o": false, "gpt-4.1": false, "gpt-3.5-turbo": false, "omni-moderation": false,
		"llama-3.1-8b": false, "hippocam-sim": false, "": false, "o": false,
	} {
		if got := openai.ReasoningModel(model); got != want {
			t.Errorf("ReasoningModel(%q) = %v, want %v", model, got, want)
		}
	}
}

// The answer's limit is max_tokens, or max_completion_tokens for a reasoning model; a
// translation that depends on the model (Anthropic's effort) follows it too.
func TestRequestLimitAndEffort(t *testing.T) {
	for _, c := range []struct {
		model, want string
	}{
		{"gpt-4o", `{"max_tokens":300}`},
		{"o3-mini", `{"max_completion_tokens":300,"reasoning_effort":"high"}`},
	} {
		var body map[string]json.RawMessage
		cl := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			json.Unmarshal(b, &body)
			writeJSON(w, 200, okAnswer)
		}, nil)
		req := userRequest("hi")
		req.Model, req.MaxTokens = c.model, 300
		req.Extra, req.ExtraFormat = json.RawMessage(`{"output_config":{"effort":"high"},"top_k":3}`), hippocam.FormatAnthropic
		if _, err := cl.Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		got := map[string]json.RawMessage{}
		for _, k := range []string{"max_tokens", "max_completion_tokens", "reasoning_effort", "top_k", "output_config"} {
			if v, ok := body[k]; ok {
				got[k] = v
			}
		}
		if b, _ := json.Marshal(got); hippocam.CanonicalJSON(string(b)) != c.want {
			t.Errorf("%s: %s, want %s", c.model, b, c.want)
		}
	}
}

// A field another format's table leaves out is logged at debug level, with its name and format.
func TestLeftOutFieldsLogged(t *testing.T) {
	var logs bytes.Buffer
	cl := MustClient(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, okAnswer) }, func(c *openai.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	req := userRequest("hi")
	req.Extra, req.ExtraFormat = json.RawMessage(`{"client_metadata":{"a":"b"},"temperature":0.2}`), hippocam.FormatResponses
	if _, err := cl.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); !strings.Contains(out, "field=client_metadata format=openai.responses") || strings.Contains(out, "field=temperature") {
		t.Errorf("logs:\n%s", out)
	}
}

// From a Responses client: the effort and verbosity reach a reasoning model only (the other
// models refuse both), and metadata never does (the chat API takes it only with store).
func TestResponsesEffortAndMetadata(t *testing.T) {
	in := params.Fields{
		"reasoning": json.RawMessage(`{"effort":"low","summary":"auto"}`),
		"text":      json.RawMessage(`{"verbosity":"low"}`),
		"metadata":  json.RawMessage(`{"team":"a"}`),
	}
	for _, c := range []struct{ model, want string }{
		{"gpt-4o", `{}`},
		{"gpt-5.1", `{"reasoning_effort":"low","verbosity":"low"}`},
	} {
		out, _ := openai.Params(hippocam.FormatResponses).Apply(in, params.Call{Model: c.model})
		b, _ := json.Marshal(out)
		if got := hippocam.CanonicalJSON(string(b)); got != hippocam.CanonicalJSON(c.want) {
			t.Errorf("%s: %s, want %s", c.model, got, c.want)
		}
	}
}
