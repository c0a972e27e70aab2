package engine_test

import (
	"encoding/json"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/tokenizer"
)

// checkRequestSize checks that a session's recorded request size adds up and equals, in total,
// the last main-model request the model received, and that the model's reported input is beside
// it.
func checkRequestSize(t *testing.T, rec *recordingModel, s *hippocam.Session) hippocam.RequestSize {
	t.Helper()
	r := s.Transcript.Request
	if r == nil {
		t.Fatal("the session records no request size")
	}
	agent := rec.byRole(hippocam.CallAgent)
	last := agent[len(agent)-1]
	want := hippocam.RequestTokens(tokenizer.MustDefault(), last.Messages, last.Tools)
	if r.Total != want {
		t.Errorf("Total = %d, want %d: the size of the last main request", r.Total, want)
	}
	if sum := r.Framing + r.System + r.Tools + r.RecallTools + r.Memory + r.Messages; sum != r.Total {
		t.Errorf("parts add up to %d, Total is %d: %+v", sum, r.Total, *r)
	}
	// The simulated model counts input as the engine does: what it reports is the total.
	if r.Reported != r.Total {
		t.Errorf("Reported = %d, want the simulated model's count %d", r.Reported, r.Total)
	}
	return *r
}

// The context meter counts what a main request carries: the agent's framing and tools as well
// as Hippocam's system prompt, recall and search, and the context.
func TestRequestSizeFramingAndTools(t *testing.T) {
	rec := &recordingModel{inner: mustSim(t)}
	e := mustEngine(t, engine.ForWindow(8000), rec)
	st := inmem.New()
	framing := []hippocam.Message{{Role: hippocam.RoleSystem, Content: "You are a careful coding agent. " + filler("rules", 10)}}
	tools := []hippocam.Tool{{Name: "read_file", Description: "Reads a file of the project.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
	res, err := e.Advance(t.Context(), st, "", "s1", engine.Input{Framing: framing, NewFraming: true, Tools: tools,
		Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "!say hello"}}})
	if err != nil {
		t.Fatal(err)
	}
	r := checkRequestSize(t, rec, res.Session)
	tok := tokenizer.MustDefault()
	if want := hippocam.MessageTokens(tok, &framing[0]); r.Framing != want {
		t.Errorf("Framing = %d, want %d", r.Framing, want)
	}
	if want := hippocam.ToolTokens(tok, &tools[0]); r.Tools != want {
		t.Errorf("Tools = %d, want %d (the agent's tool)", r.Tools, want)
	}
	if r.RecallTools == 0 || r.System <= r.Tools || r.Messages == 0 {
		t.Errorf("size %+v: Hippocam's prompt, recall tools and the user message must count", r)
	}
	if r.Memory != 0 {
		t.Errorf("Memory = %d in a session with nothing consolidated", r.Memory)
	}
	stored, err := st.Session(t.Context(), "", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if stored.Transcript.Request == nil || *stored.Transcript.Request != r {
		t.Errorf("stored request size = %+v, want %+v", stored.Transcript.Request, r)
	}
}

// After consolidation and a recall, the meter's memory part holds the memories and the recall
// exchanges of the step the answer came from.
func TestRequestSizeMemory(t *testing.T) {
	rec, res := ablationRun(t, engine.Ablations{})
	r := checkRequestSize(t, rec, res.Session)
	if r.Memory == 0 || r.Messages == 0 {
		t.Errorf("size %+v: memories and kept messages must both count", r)
	}
	if r.Framing != 0 || r.Tools != 0 {
		t.Errorf("size %+v: no framing, no agent tools were sent", r)
	}
}
