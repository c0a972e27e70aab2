package engine_test

import (
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// Use reinforces: a detail reached through recall is consolidated right after the answer into a
// memory near the present, so that the same question again needs no recall; the memory keeps the
// question's evidence only, never another value of the layer it opened.
func TestUseReinforces(t *testing.T) {
	c := newConversation(t, mustEngine(t, engine.ForWindow(8000), mustSim(t)))
	c.mustUser("#open Prepare the invoice report | the report is sent\n#open Read the exports | both exports are read\nStart with the exports.")
	c.mustUser("!call read_file {\"path\":\"exports/shop.csv\"}\n!call read_file {\"path\":\"exports/market.csv\"}")
	c.mustResults("revenue_shop := 1200\ndetail shop_owner := Dana\ndetail shop_city := Oslo\n"+filler("shop", 60), "revenue_market := 800\n"+filler("market", 50))
	c.mustUser("#close Read the exports\n#open Write the report | the report file exists\nrevenue_shop := 1250\n!say corrected the shop revenue")
	c.mustUser("#close Write the report\n#close Prepare the invoice report\n!say done")
	first := c.mustUser("!ask shop_owner")
	if first.Answer.Content != "shop_owner := Dana" || first.RecallCalls == 0 || first.Reinforced != 1 {
		t.Fatalf("first ask: %q, %d recalls, %d reinforced; want Dana through recall, reinforced", first.Answer.Content, first.RecallCalls, first.Reinforced)
	}
	s := c.session()
	memory := s.Context[len(s.Context)-2]
	if memory.Kind != hippocam.KindIntentMemory || !strings.Contains(memory.Content, "shop_owner := Dana") ||
		strings.Contains(memory.Content, "shop_city") || strings.Contains(memory.Content, "1200") {
		t.Fatalf("the memory before the answer = %s %q; want only the question's evidence", memory.Kind, memory.Content)
	}
	again := c.mustUser("!ask shop_owner")
	if again.Answer.Content != "shop_owner := Dana" || again.RecallCalls != 0 {
		t.Fatalf("asked again: %q with %d recalls; want Dana with none", again.Answer.Content, again.RecallCalls)
	}
	if got := c.mustUser("!ask revenue_shop").Answer.Content; got != "revenue_shop := 1250" {
		t.Fatalf("revenue_shop = %q, want the later value", got)
	}
	c.checkLossless()
}
