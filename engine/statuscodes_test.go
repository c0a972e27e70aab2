package engine_test

import (
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// A real PALIM answer over a Go handler wrote "a bad value gives 400" for http.StatusBadRequest
// and was refused; the code follows from the constant's name. A code no constant in view names
// is still refused.
func TestGroundingStatusCodes(t *testing.T) {
	ctx := []hippocam.Message{
		{Role: hippocam.RoleUser, Content: "Read the handler."},
		{Role: hippocam.RoleTool, ToolCallID: "c1", Content: "if err != nil {\n\thttp.Error(w, \"from: want YYYY-MM-DD\", http.StatusBadRequest)\n}\nraise HTTPException(status.HTTP_404_NOT_FOUND)\nreturn HttpStatus.UNPROCESSABLE_ENTITY"},
	}
	check := func(fact string) []string {
		out := engine.PalimOutput{Narrative: "I read the handler.", Knowledge: []hippocam.KnowledgeItem{{Fact: fact, Evaluation: hippocam.EvalNeutral}}}
		return engine.Check(hippocam.CallPalim, ctx, 0, nil, mustJSON(t, out))
	}
	for _, fact := range []string{
		"A bad from date gives 400.",
		"A missing item gives 404.",
		"Invalid input gives 422.",
	} {
		if p := check(fact); len(p) > 0 {
			t.Errorf("%q refused: %v", fact, p)
		}
	}
	for _, fact := range []string{"A bad from date gives 409.", "The handler answers 503 when busy."} {
		if p := check(fact); len(p) == 0 {
			t.Errorf("%q accepted; no constant in view names that code", fact)
		}
	}
}

// A pattern of single letters ("vX.Y.Z" for a release's number) names nothing; a real release
// number found nowhere is still refused.
func TestGroundingVersionPattern(t *testing.T) {
	ctx := []hippocam.Message{{Role: hippocam.RoleTool, ToolCallID: "c1", Content: "## v0.8.2 (2026-02-20)\n- PDF export"}}
	check := func(fact string) []string {
		out := engine.PalimOutput{Narrative: "I read the changelog.", Knowledge: []hippocam.KnowledgeItem{{Fact: fact, Evaluation: hippocam.EvalNeutral}}}
		return engine.Check(hippocam.CallPalim, ctx, 0, nil, mustJSON(t, out))
	}
	if p := check("Entries read '## vX.Y.Z (date)', newest first; the latest is v0.8.2."); len(p) > 0 {
		t.Errorf("the pattern refused: %v", p)
	}
	if p := check("The latest entry is v0.9.1."); len(p) == 0 {
		t.Error("a release number found nowhere accepted")
	}
}
