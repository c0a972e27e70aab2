package hippocam_test

import (
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
)

// A system message inside a tool exchange moves to just after the exchange's results; one
// elsewhere stays; an exchange a user message ends unanswered lets it out there.
func TestExchangesWhole(t *testing.T) {
	u := func(s string) hippocam.Message { return hippocam.Message{Role: hippocam.RoleUser, Content: s} }
	sys := func(s string) hippocam.Message { return hippocam.Message{Role: hippocam.RoleSystem, Content: s} }
	call := func(ids ...string) hippocam.Message {
		m := hippocam.Message{Role: hippocam.RoleAssistant, Content: "call " + strings.Join(ids, ",")}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, hippocam.ToolCall{ID: id, Name: "f"})
		}
		return m
	}
	res := func(id string) hippocam.Message {
		return hippocam.Message{Role: hippocam.RoleTool, ToolCallID: id, Content: "result " + id}
	}
	order := func(ms []hippocam.Message) string {
		var s []string
		for _, m := range ms {
			s = append(s, m.Content)
		}
		return strings.Join(s, " | ")
	}
	for _, c := range []struct {
		name string
		in   []hippocam.Message
		want string
	}{
		{"Untouched", []hippocam.Message{u("q"), sys("S"), call("a"), res("a"), sys("T")}, "q | S | call a | result a | T"},
		{"Between", []hippocam.Message{u("q"), call("a", "b"), res("a"), sys("S"), res("b"), u("r")}, "q | call a,b | result a | result b | S | r"},
		{"RightAfterCalls", []hippocam.Message{u("q"), call("a"), sys("S"), sys("T"), res("a")}, "q | call a | result a | S | T"},
		{"Unanswered", []hippocam.Message{u("q"), call("a"), sys("S"), u("r")}, "q | call a | S | r"},
		{"AtTheEnd", []hippocam.Message{u("q"), call("a"), sys("S")}, "q | call a | S"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := hippocam.ExchangesWhole(c.in)
			if order(got) != c.want {
				t.Errorf("got %s\nwant %s", order(got), c.want)
			}
			if c.name == "Untouched" && &got[0] != &c.in[0] {
				t.Error("a conversation with nothing to move was copied")
			}
		})
	}
}
