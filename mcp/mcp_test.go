package mcp_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hippocam/hippocam/mcp"
	"github.com/hippocam/hippocam/sessions"
)

var allTools = []string{mcp.ToolGetAdvisory, mcp.ToolListSessions, mcp.ToolRecallMemory, mcp.ToolReportOutcome, mcp.ToolSearchLessons, mcp.ToolSearchMemory}

// The six tools are listed with object schemas that name their required arguments and refuse
// others; the lessons file and the expansion template are listed, and the tenant's sessions
// (only the tenant's) as resources of the template.
func TestListed(t *testing.T) {
	w := newWorld(t)
	w.shopSession("acme", "visit 1") // a space: the URI percent-encodes it
	w.shopSession("other", "theirs")
	cs := w.client("acme")
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	required := map[string][]string{}
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		schema, _ := tool.InputSchema.(map[string]any)
		if schema["type"] != "object" || schema["additionalProperties"] != false {
			t.Errorf("%s: input schema %v, want a closed object", tool.Name, schema)
		}
		reqs, _ := schema["required"].([]any)
		for _, r := range reqs {
			required[tool.Name] = append(required[tool.Name], r.(string))
		}
		if tool.OutputSchema == nil || tool.Description == "" {
			t.Errorf("%s: no output schema or no description", tool.Name)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, allTools) {
		t.Fatalf("tools %v, want %v", names, allTools)
	}
	want := map[string][]string{mcp.ToolSearchMemory: {"session", "query"}, mcp.ToolRecallMemory: {"session", "ref"},
		mcp.ToolGetAdvisory: {"task"}, mcp.ToolReportOutcome: {"session", "feedback"}, mcp.ToolSearchLessons: {"query"}}
	for tool, args := range want {
		if !slices.Equal(required[tool], args) {
			t.Errorf("%s requires %v, want %v", tool, required[tool], args)
		}
	}
	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	if wantURIs := []string{mcp.LessonsURI, "hippocam://sessions/visit%201/expand"}; !slices.Equal(uris, wantURIs) {
		t.Errorf("resources %v, want %v", uris, wantURIs)
	}
	tmpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpl.ResourceTemplates) != 1 || tmpl.ResourceTemplates[0].URITemplate != mcp.ExpandTemplate {
		t.Fatalf("templates %+v (%v)", tmpl, err)
	}
	var listed struct {
		Sessions []struct{ ID, Resource string }
	}
	ok(t, cs, mcp.ToolListSessions, nil, &listed)
	if len(listed.Sessions) != 1 || listed.Sessions[0].ID != "visit 1" || listed.Sessions[0].Resource != uris[1] {
		t.Fatalf("list_sessions %+v", listed)
	}
}

// search_memory finds the archived message with the ref of the layer that holds it;
// recall_memory opens that layer, and the message itself by its id.
func TestSearchAndRecall(t *testing.T) {
	w := newWorld(t)
	w.shopSession("acme", "s1")
	cs := w.client("acme")
	var found struct {
		Hits []struct{ ID, Role, Ref, Open, Snippet string }
		More bool
	}
	text := ok(t, cs, mcp.ToolSearchMemory, map[string]any{"session": "s1", "query": "Dana"}, &found)
	if len(found.Hits) != 1 || found.Hits[0].Ref == "" || found.Hits[0].Open != found.Hits[0].Ref || !strings.Contains(found.Hits[0].Snippet, "Dana") {
		t.Fatalf("search: %+v\n%s", found, text)
	}
	if !strings.Contains(text, "in [ref:"+found.Hits[0].Ref+"]") {
		t.Errorf("search text does not name the layer: %s", text)
	}
	hit := found.Hits[0]
	var layer struct {
		Ref      string
		Layer    bool
		Total    int
		Messages []struct{ ID, Role, Content string }
	}
	text = ok(t, cs, mcp.ToolRecallMemory, map[string]any{"session": "s1", "ref": "[ref:" + hit.Open + "]"}, &layer)
	i := slices.IndexFunc(layer.Messages, func(m struct{ ID, Role, Content string }) bool { return m.ID == hit.ID })
	if !layer.Layer || layer.Ref != hit.Ref || i < 0 || !strings.Contains(layer.Messages[i].Content, "QX-s1") || layer.Total != len(layer.Messages) {
		t.Fatalf("recall of %s: %+v", hit.Open, layer)
	}
	if !strings.Contains(text, "QX-s1") {
		t.Errorf("recall text lacks the message: %s", text)
	}
	var one struct {
		Layer    bool
		Messages []struct{ ID, Content string }
	}
	ok(t, cs, mcp.ToolRecallMemory, map[string]any{"session": "s1", "ref": hit.ID}, &one)
	if one.Layer || len(one.Messages) != 1 || !strings.Contains(one.Messages[0].Content, "Dana") {
		t.Fatalf("recall of message %s: %+v", hit.ID, one)
	}
	// A layer from its second message on.
	var rest struct {
		From     int
		Messages []struct{ ID string }
	}
	ok(t, cs, mcp.ToolRecallMemory, map[string]any{"session": "s1", "ref": hit.Ref + "#1"}, &rest)
	if rest.From != 1 || len(rest.Messages) != layer.Total-1 || rest.Messages[0].ID != layer.Messages[1].ID {
		t.Fatalf("recall of %s#1: %+v", hit.Ref, rest)
	}
}

// A message longer than a page comes in pages, each with the handle of the rest, never cut
// inside a character; the pages join into the message.
func TestRecallPages(t *testing.T) {
	const pageBytes = 1000
	w := newWorldWith(t, mcp.Config{RecallBytes: pageBytes}, sessions.LearnRouted)
	a := w.agent("acme", "long")
	long := strings.Repeat("ünïcode wörds, ", pageBytes/7) // two and some pages
	a.say("!say ok\n" + long)
	sess, err := w.store.Session(context.Background(), "acme", "long")
	if err != nil {
		t.Fatal(err)
	}
	var id, want string
	for _, m := range sess.Context {
		if strings.Contains(m.Content, "wörds") {
			id, want = m.ID, m.Content
		}
	}
	cs := w.client("acme")
	var got strings.Builder
	ref, pages := id, 0
	for ref != "" {
		var p struct {
			Total, From int
			Messages    []struct{ Content string }
			Next        string
		}
		ok(t, cs, mcp.ToolRecallMemory, map[string]any{"session": "long", "ref": ref}, &p)
		if p.Total != len(want) || p.From != got.Len() || len(p.Messages[0].Content) > pageBytes {
			t.Fatalf("page %d (%s): total %d, from %d, %d bytes", pages, ref, p.Total, p.From, len(p.Messages[0].Content))
		}
		if !utf8.ValidString(p.Messages[0].Content) {
			t.Fatalf("page %d (%s) cuts a character", pages, ref)
		}
		got.WriteString(p.Messages[0].Content)
		ref = p.Next
		if ref != "" && ref != fmt.Sprintf("%s@%d", id, got.Len()) {
			t.Fatalf("next handle %q after %d bytes", ref, got.Len())
		}
		pages++
	}
	if got.String() != want || pages != 3 {
		t.Fatalf("%d pages joined into %d bytes, want 3 pages of the %d-byte message", pages, got.Len(), len(want))
	}
}

// A layer longer than RecallMessages comes in parts, each with the handle of the rest (ref#N);
// a message whose text does not fit in what is left of RecallBytes is listed with its text left
// out, and its id reads it.
func TestRecallLayerParts(t *testing.T) {
	ctx := context.Background()
	w := newWorldWith(t, mcp.Config{RecallMessages: 2, RecallBytes: 60}, sessions.LearnRouted)
	w.shopSession("acme", "s1")
	hits, err := w.store.Search(ctx, "acme", "s1", "Dana", 1)
	if err != nil || len(hits) != 1 || hits[0].Ref == "" {
		t.Fatalf("search: %+v (%v)", hits, err)
	}
	ref := hits[0].Ref
	kids, err := w.store.Children(ctx, "acme", "s1", ref)
	if err != nil || len(kids) < 3 {
		t.Fatalf("the layer beneath %s: %d messages (%v); the test needs 3 or more", ref, len(kids), err)
	}
	cs := w.client("acme")
	type part struct {
		From     int
		Messages []struct {
			ID, Content string
			LeftOut     bool `json:"left_out"`
		}
		Next string
	}
	var ids []string
	leftOut := 0
	for handle := ref; handle != ""; {
		var p part
		ok(t, cs, mcp.ToolRecallMemory, map[string]any{"session": "s1", "ref": handle}, &p)
		if len(p.Messages) > 2 || p.From != len(ids) {
			t.Fatalf("%s: from %d with %d messages", handle, p.From, len(p.Messages))
		}
		used := 0
		for i, m := range p.Messages {
			ids = append(ids, m.ID)
			used += len(m.Content)
			want := kids[p.From+i].Content
			switch {
			case m.LeftOut && m.Content != "":
				t.Errorf("%s: left out but shown", m.ID)
			case m.LeftOut:
				leftOut++
				var one part
				ok(t, cs, mcp.ToolRecallMemory, map[string]any{"session": "s1", "ref": m.ID}, &one)
				if len(want) <= 60 && one.Messages[0].Content != want {
					t.Errorf("recall of the left-out %s: %q, want %q", m.ID, one.Messages[0].Content, want)
				}
			case m.Content != want:
				t.Errorf("%s: %q, want %q", m.ID, m.Content, want)
			}
		}
		if used > 60 {
			t.Fatalf("%s: %d bytes of text, more than the bound", handle, used)
		}
		if p.Next != "" && p.Next != fmt.Sprintf("%s#%d", ref, len(ids)) {
			t.Fatalf("next %q after %d messages", p.Next, len(ids))
		}
		handle = p.Next
	}
	if len(ids) != len(kids) || leftOut == 0 {
		t.Fatalf("parts listed %d of %d messages, %d left out; want all, some left out", len(ids), len(kids), leftOut)
	}
}
