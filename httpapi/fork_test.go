package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/openai/wire"
)

// forkView is what these tests read of GET /api/sessions/{id}.
type forkView struct {
	Context []struct {
		ID      string `json:"id"`
		Kind    string `json:"kind"`
		Ref     string `json:"ref"`
		Content string `json:"content"`
	} `json:"context"`
	Usage map[string]struct {
		Calls int `json:"calls"`
	} `json:"usage"`
	Fork *struct {
		From string `json:"from"`
		At   int    `json:"at"`
	} `json:"fork"`
}

// Through the proxy, a rewound history forks and the fork takes over the parent's memories:
// its usage shows no PALIM call, its context opens with the parent's memory, its expansion
// is its whole history byte for byte, and the model recalls inherited details in it.
func TestForkInheritsThroughTheProxy(t *testing.T) {
	s := newServer(t, 8000, nil)
	a := &agent{t: t, s: s, session: "long"}
	for i := 0; i < 40; i++ {
		a.user(false, fmt.Sprintf("fact_%d := %d\n%s\ndetail code_%d := c%d\n!say noted %d", i, i*7, strings.Repeat("Some words of context. ", 30), i, i, i))
	}
	var parent forkView
	s.do(t, "GET", "/api/sessions/long", "", "", nil).json(t, &parent)
	if parent.Usage["palim"].Calls == 0 || (parent.Context[0].Ref == "" && parent.Context[1].Ref == "") {
		t.Fatalf("the session was never folded: usage %v, context opens with %+v", parent.Usage, parent.Context[:2])
	}

	b := &agent{t: t, s: s, session: "long", history: append([]wire.ChatMessage(nil), a.history[:len(a.history)-6]...)}
	_, rep := b.send(false, wire.ChatMessage{Role: "user", Content: wire.StringContent("!say forked")})
	if rep.header.Get(httpapi.SessionHeader) != "long~2" || rep.header.Get(httpapi.EventHeader) != "forked" {
		t.Fatalf("the rewound history answered in %s (%s)", rep.header.Get(httpapi.SessionHeader), rep.header.Get(httpapi.EventHeader))
	}
	var fork forkView
	s.do(t, "GET", "/api/sessions/long~2", "", "", nil).json(t, &fork)
	if fork.Fork == nil || fork.Fork.From != "long" || fork.Fork.At != len(a.history)-6 {
		t.Fatalf("fork origin %+v", fork.Fork)
	}
	if n := fork.Usage["palim"].Calls; n != 0 {
		t.Fatalf("the fork made %d PALIM calls: it consolidated the shared history again", n)
	}
	if p, f := parent.Context[1], fork.Context[1]; f.ID != p.ID || f.Ref != p.Ref || f.Content != p.Content {
		t.Fatalf("the fork's context opens with %+v, the parent's with %+v", f, p)
	}
	type expansion struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
			Origin  *struct {
				Raw string `json:"raw"`
			} `json:"origin"`
		} `json:"messages"`
	}
	var exp, pexp expansion
	s.do(t, "GET", "/api/sessions/long~2/expand", "", "", nil).json(t, &exp)
	s.do(t, "GET", "/api/sessions/long/expand", "", "", nil).json(t, &pexp)
	if len(exp.Messages) != len(b.history) {
		t.Fatalf("the fork expands to %d messages, its history has %d", len(exp.Messages), len(b.history))
	}
	for i, m := range exp.Messages {
		text, _ := b.history[i].Text()
		if m.Role != b.history[i].Role || m.Content != text {
			t.Fatalf("expanded message %d is %s %q, the client sent %s %q", i, m.Role, m.Content, b.history[i].Role, text)
		}
		if i < fork.Fork.At && m.Role == "user" && (m.Origin == nil || pexp.Messages[i].Origin == nil || m.Origin.Raw != pexp.Messages[i].Origin.Raw) {
			t.Fatalf("expanded message %d lost the bytes it arrived in: %+v", i, m.Origin)
		}
	}
	if got := b.user(false, "!ask code_2"); got != "code_2 := c2" {
		t.Fatalf("the fork answered %q, want code_2 := c2 (recalled from an inherited memory)", got)
	}
}
