package sessions_test

import (
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/sessions"
)

func user(text string) hippocam.Message {
	return hippocam.Message{Role: hippocam.RoleUser, Content: text}
}
func system(text string) hippocam.Message {
	return hippocam.Message{Role: hippocam.RoleSystem, Content: text}
}

// A session's title is the first line of its first user message, less the context blocks
// clients put ahead of the user's words; a title request is recognised by its prompt and titled
// by the conversation it asks about; what the transport read of the client stays with the
// session.
func TestClientTitle(t *testing.T) {
	long := "Please look at the failing integration test in the payments service and tell me why the retry logic double-charges"
	tests := []struct {
		name    string
		framing []hippocam.Message
		msgs    []hippocam.Message
		client  hippocam.Client
		want    hippocam.Client
	}{
		{name: "FirstLine", framing: []hippocam.Message{system("You help.")},
			msgs: []hippocam.Message{user("  \n  Rename the --verbose flag  \nand update the docs\n!say ok")},
			want: hippocam.Client{Title: "Rename the --verbose flag"}},
		// The title ask is the first user message of a title request; the same words later in
		// a conversation are its own text.
		{name: "AskLater", msgs: []hippocam.Message{user("fix the tests"), user("Generate a title for this conversation:\nand also this")},
			want: hippocam.Client{Title: "fix the tests"}},
		{name: "Long", msgs: []hippocam.Message{user(long + "\n!say ok")},
			want: hippocam.Client{Title: "Please look at the failing integration test in the payments service and tell me…"}},
		{name: "ClaudeCodeReminders",
			msgs: []hippocam.Message{user("<system-reminder>\nAs you answer, use this context:\n# claudeMd\nbe brief\n</system-reminder>\n" +
				"<system-reminder>today is Friday</system-reminder>\nWhy does the build fail on arm64?\n!say ok")},
			client: hippocam.Client{Conversation: "9d2c-session", Agent: "", Kind: ""},
			want:   hippocam.Client{Title: "Why does the build fail on arm64?", Conversation: "9d2c-session"}},
		{name: "CodexContext",
			msgs: []hippocam.Message{user("# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nrun tests\n</INSTRUCTIONS>"),
				user("<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"), user("Add a --dry-run flag\n!say ok")},
			client: hippocam.Client{Conversation: "019a-sess", Agent: "019a-thread-2", Parent: "019a-thread-1", Kind: hippocam.ClientSubagent},
			want: hippocam.Client{Title: "Add a --dry-run flag", Conversation: "019a-sess", Agent: "019a-thread-2", Parent: "019a-thread-1",
				Kind: hippocam.ClientSubagent}},
		{name: "OpencodeTitleRequest",
			framing: []hippocam.Message{system("You are a title generator. You output ONLY a thread title. Nothing else.\n<task>…</task>")},
			msgs:    []hippocam.Message{user("Generate a title for this conversation:\n"), user("Rename the --verbose flag\n!say Flag rename")},
			want:    hippocam.Client{Title: "Rename the --verbose flag", Kind: hippocam.ClientTitle}},
		{name: "OpencodeTitleRequestOneMessage",
			msgs: []hippocam.Message{user("Generate a title for this conversation:\n\nRename the --verbose flag\n!say Flag rename")},
			want: hippocam.Client{Title: "Rename the --verbose flag", Kind: hippocam.ClientTitle}},
		{name: "ClaudeCodeSessionTitle",
			framing: []hippocam.Message{system("You are Claude Code, Anthropic's official CLI for Claude."),
				system("You are naming a coding session so the user can pick it out of a long list of sessions.")},
			msgs:   []hippocam.Message{user("<session>\nWhy does the build fail on arm64?\n</session>\n\nWrite the title in English.\n!say Build on arm64")},
			client: hippocam.Client{Conversation: "9d2c-session"},
			want:   hippocam.Client{Title: "Why does the build fail on arm64?", Conversation: "9d2c-session", Kind: hippocam.ClientTitle}},
		{name: "ClaudeCodeTopic",
			framing: []hippocam.Message{system("Analyze if this message indicates a new conversation topic. If it does, extract a 2-3 word title.")},
			msgs:    []hippocam.Message{user("Why does the build fail on arm64?\n!say {}")},
			client:  hippocam.Client{Conversation: "9d2c-session"},
			want:    hippocam.Client{Title: "Why does the build fail on arm64?", Conversation: "9d2c-session", Kind: hippocam.ClientTitle}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, _ := newService(t, 8000)
			conv := &hippocam.Conversation{Format: hippocam.FormatChat, Framing: tt.framing, Messages: tt.msgs}
			res, err := svc.Continue(t.Context(), &sessions.Request{Tenant: "t", Conversation: conv, Received: time.Now(), Client: tt.client})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Session.Transcript.Client; got == nil || *got != tt.want {
				t.Errorf("client = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The first request decides a session's title and kind; later requests add what the client
// had not said yet, and change neither.
func TestClientKeptAcrossRequests(t *testing.T) {
	svc, st := newService(t, 8000)
	c := &client{framing: []hippocam.Message{system("You help.")}, history: []hippocam.Message{user("Rename the flag\n!say ok")}}
	res, err := svc.Continue(t.Context(), c.request("", false))
	if err != nil {
		t.Fatal(err)
	}
	c.history = append(c.history, res.Answer, user("Generate a title for this conversation: no, not a title request\n!say ok"))
	req := c.request("", false)
	req.Client = hippocam.Client{Conversation: "conv-1", Kind: hippocam.ClientSubagent}
	res2, err := svc.Continue(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Session.ID != res.Session.ID {
		t.Fatalf("the second request went to %s, not %s", res2.Session.ID, res.Session.ID)
	}
	want := hippocam.Client{Title: "Rename the flag", Conversation: "conv-1"}
	stored, err := st.Session(t.Context(), "t", res.Session.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := stored.Transcript.Client; got == nil || *got != want {
		t.Errorf("client = %+v, want %+v", got, want)
	}
	list, err := st.Sessions(t.Context(), "t")
	if err != nil || len(list) != 1 || list[0].Client == nil || *list[0].Client != want {
		t.Errorf("listing = %+v, %v; want one session with client %+v", list, err, want)
	}
}
