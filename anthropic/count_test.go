package anthropic_test

import (
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/tokenizer"
)

// A request counts as the Messages API receives it: the leading system messages are one system
// prompt (one message's framing, not one per message), the rest as the domain counts it.
func TestRequestTokens(t *testing.T) {
	tok := tokenizer.MustDefault()
	c := newClient(t, "http://unused.invalid")
	tools := []hippocam.Tool{{Name: "read_file", Description: "reads", Parameters: []byte(`{"type":"object"}`)}}
	rest := []hippocam.Message{{Role: hippocam.RoleUser, Content: "hello"}, {Role: hippocam.RoleAssistant, Content: "hi"}, {Role: hippocam.RoleUser, Content: "again"}}
	for _, tc := range []struct {
		name   string
		system []string
	}{{"OneSystem", []string{"You help."}}, {"TwoSystems", []string{"You help.", "Be brief."}}, {"NoSystem", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			var msgs []hippocam.Message
			for _, s := range tc.system {
				msgs = append(msgs, hippocam.Message{Role: hippocam.RoleSystem, Content: s})
			}
			var joined []hippocam.Message
			if len(tc.system) > 0 {
				text := tc.system[0]
				for _, s := range tc.system[1:] {
					text += "\n" + s
				}
				joined = []hippocam.Message{{Role: hippocam.RoleSystem, Content: text}}
			}
			req := &hippocam.Request{Messages: append(msgs, rest...), Tools: tools}
			want := hippocam.RequestTokens(tok, append(joined, rest...), tools)
			if got := c.RequestTokens(tok, req); got != want {
				t.Fatalf("counted %d, want %d", got, want)
			}
		})
	}
}
