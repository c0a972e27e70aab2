package mcp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/memory/library"
	"github.com/hippocam/hippocam/sessions"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools' names.
const (
	ToolListSessions  = "list_sessions"
	ToolSearchMemory  = "search_memory"
	ToolRecallMemory  = "recall_memory"
	ToolGetAdvisory   = "get_advisory"
	ToolReportOutcome = "report_outcome"
	ToolSearchLessons = "search_lessons"
)

// SearchHits is the most hits search_memory returns.
const SearchHits = 20

func (t *tenantServer) addTools(srv *sdk.Server) {
	closed := false // every tool acts on Hippocam's own store only
	read := &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &closed}
	additive := false
	sdk.AddTool(srv, &sdk.Tool{Name: ToolListSessions, Title: "List sessions", Annotations: read,
		Description: "List your Hippocam sessions (the agent conversations Hippocam keeps), latest first: each with its id, " +
			"how many messages its tree holds and when it last changed."}, t.listSessions)
	sdk.AddTool(srv, &sdk.Tool{Name: ToolSearchMemory, Title: "Search a session's memory", Annotations: read,
		Description: fmt.Sprintf("Search the full archive of one session, every original message at any depth, for a word, "+
			"name, identifier or short phrase (every word must occur; case and punctuation do not matter). Returns up to %d "+
			"matching messages, latest first, each with an excerpt and the ref to open with recall_memory.", SearchHits)}, t.searchMemory)
	sdk.AddTool(srv, &sdk.Tool{Name: ToolRecallMemory, Title: "Recall a layer of memory", Annotations: read,
		Description: "Open one layer of a session's memory: the messages archived beneath a ref (r12), oldest first, or one " +
			"message by its id (m40). Long results come in pages: follow the handle in next (r12#30, m40@8192) for the rest; " +
			"a message whose text was left out is read by recalling its id."}, t.recallMemory)
	sdk.AddTool(srv, &sdk.Tool{Name: ToolGetAdvisory, Title: "Get advice for a task", Annotations: read,
		Description: "Before starting a task, get the advice Hippocam's learning across tasks holds for it: the task is routed " +
			"to a cluster of earlier, similar tasks as a task through the proxy would be, and that cluster's advisory is returned " +
			"(empty when learning is off, when no cluster fits the task yet, or when the cluster has nothing yet). It changes " +
			"nothing: asking is not starting a task."}, t.getAdvisory)
	sdk.AddTool(srv, &sdk.Tool{Name: ToolReportOutcome, Title: "Report a task's outcome",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: &additive, OpenWorldHint: &closed},
		Description: "End the task a session ran, with feedback on how it went (and optionally whether it succeeded and a reward): " +
			"the feedback joins the session, the session ends, and the cluster the task was routed to learns from it. " +
			"A session's outcome can be reported once."}, t.reportOutcome)
	sdk.AddTool(srv, &sdk.Tool{Name: ToolSearchLessons, Title: "Search lessons", Annotations: read,
		Description: "Search the lessons in force that learning across tasks drew from earlier attempts: which option to use or " +
			"avoid at a decision point, under which conditions, with the evidence and the tasks and attempts it came from. " +
			"An empty query lists them all."}, t.searchLessons)
}

// list_sessions

type listSessionsIn struct{}

type sessionOut struct {
	ID        string `json:"id" jsonschema:"the session's id, as the other tools take it"`
	Messages  int    `json:"messages" jsonschema:"how many messages the session's tree holds"`
	UpdatedAt string `json:"updated_at" jsonschema:"when the session last changed (RFC 3339)"`
	ForkOf    string `json:"fork_of,omitempty" jsonschema:"the session this one forked from, if it is a fork"`
	Resource  string `json:"resource" jsonschema:"the URI of the session's expansion, every original message in order"`
}

type listSessionsOut struct {
	Sessions []sessionOut `json:"sessions"`
}

func (t *tenantServer) listSessions(ctx context.Context, _ *sdk.CallToolRequest, _ listSessionsIn) (*sdk.CallToolResult, listSessionsOut, error) {
	list, err := t.cfg.Store.Sessions(ctx, t.tenant)
	if err != nil {
		return nil, listSessionsOut{}, t.toolError(ToolListSessions, err)
	}
	out := listSessionsOut{Sessions: make([]sessionOut, len(list))}
	var b strings.Builder
	if len(list) == 0 {
		b.WriteString("No session yet: sessions are made by agents whose model calls go through Hippocam's proxy.")
	} else {
		fmt.Fprintf(&b, "%s, latest first.", count(len(list), "session", "sessions"))
	}
	for i, info := range list {
		s := sessionOut{ID: info.ID, Messages: info.Messages, UpdatedAt: info.UpdatedAt.UTC().Format(time.RFC3339), Resource: expandURI(info.ID)}
		if info.Fork != nil {
			s.ForkOf = info.Fork.From
		}
		out.Sessions[i] = s
		fmt.Fprintf(&b, "\n- %s · %s · updated %s", s.ID, count(s.Messages, "message", "messages"), s.UpdatedAt)
		if s.ForkOf != "" {
			fmt.Fprintf(&b, " · fork of %s", s.ForkOf)
		}
	}
	return text(b.String()), out, nil
}

// search_memory

type searchMemoryIn struct {
	Session string `json:"session" jsonschema:"the session's id, as list_sessions gives it"`
	Query   string `json:"query" jsonschema:"a name, identifier, key or a few distinctive words, as written in the message looked for"`
}

type hitOut struct {
	ID   string `json:"id" jsonschema:"the matching message's id"`
	Role string `json:"role"`
	// Ref is where the message lies: the ref of the layer that holds it, "" while it is still in
	// the session's context.
	Ref     string `json:"ref,omitempty" jsonschema:"the ref of the archived layer that holds the message; absent while the message is still in the session's context"`
	Open    string `json:"open" jsonschema:"what to pass to recall_memory as ref to read the message where it was said"`
	Snippet string `json:"snippet" jsonschema:"an excerpt around the first match, on one line"`
}

type searchMemoryOut struct {
	Session string   `json:"session"`
	Query   string   `json:"query"`
	Hits    []hitOut `json:"hits"`
	More    bool     `json:"more" jsonschema:"more messages match than are returned: add words to narrow the search"`
}

func (t *tenantServer) searchMemory(ctx context.Context, _ *sdk.CallToolRequest, in searchMemoryIn) (*sdk.CallToolResult, searchMemoryOut, error) {
	fail := func(err error) (*sdk.CallToolResult, searchMemoryOut, error) {
		return nil, searchMemoryOut{}, t.toolError(ToolSearchMemory, err)
	}
	if err := t.checkSession(ctx, in.Session); err != nil {
		return fail(err)
	}
	hits, err := hippocam.SessionArchive(t.cfg.Store, t.tenant, in.Session).Search(ctx, in.Query, SearchHits+1)
	if hippocam.ErrorCode(err) == hippocam.ENOTFOUND {
		err = sessionNotFound(in.Session) // deleted meanwhile
	}
	if err != nil {
		return fail(err)
	}
	out := searchMemoryOut{Session: in.Session, Query: in.Query, Hits: []hitOut{}}
	if len(hits) > SearchHits {
		hits, out.More = hits[:SearchHits], true
	}
	for _, h := range hits {
		o := hitOut{ID: h.Message.ID, Role: string(h.Message.Role), Ref: h.Ref, Open: h.Ref, Snippet: h.Snippet}
		if o.Open == "" {
			o.Open = h.Message.ID
		}
		out.Hits = append(out.Hits, o)
	}
	return text(searchText(&out)), out, nil
}

func searchText(o *searchMemoryOut) string {
	var b strings.Builder
	quoted := fmt.Sprintf("%q", strings.Join(strings.Fields(o.Query), " "))
	if len(o.Hits) == 0 {
		fmt.Fprintf(&b, "Search of session %s for %s: no message holds all of these words. Try other words, or fewer.", o.Session, quoted)
		return b.String()
	}
	n := count(len(o.Hits), "matching message", "matching messages")
	if o.More {
		n = fmt.Sprintf("the latest %d of more matching messages", len(o.Hits))
	}
	fmt.Fprintf(&b, "Search of session %s for %s: %s, latest first. Recall a hit's ref with recall_memory to read it where it was said.", o.Session, quoted, n)
	for i, h := range o.Hits {
		where := "in view (not archived)"
		if h.Ref != "" {
			where = "in " + hippocam.RefTag(h.Ref)
		}
		fmt.Fprintf(&b, "\n--- %d/%d · %s · %s · %s: %s", i+1, len(o.Hits), h.ID, h.Role, where, h.Snippet)
	}
	return b.String()
}

// recall_memory: recall.go

// get_advisory

type getAdvisoryIn struct {
	Task string `json:"task" jsonschema:"the task, as its first message to the agent would state it"`
}

type getAdvisoryOut struct {
	// Decision is how the cluster was chosen: reuse, create, pinned, global, or stateless (the
	// router gave up), or off (learning is off).
	Decision       string `json:"decision" jsonschema:"how the cluster was chosen: reuse, create, global, stateless (no cluster could be chosen) or off (learning is off on this server)"`
	Cluster        string `json:"cluster,omitempty" jsonschema:"the cluster the task was routed to"`
	System         string `json:"system,omitempty" jsonschema:"the cluster's memory system"`
	Reason         string `json:"reason,omitempty" jsonschema:"why the router chose it, or why there is no cluster"`
	Advisory       string `json:"advisory" jsonschema:"the advice to read before the task; empty when there is none"`
	AdvisoryTokens int    `json:"advisory_tokens"`
}

func (t *tenantServer) getAdvisory(ctx context.Context, _ *sdk.CallToolRequest, in getAdvisoryIn) (*sdk.CallToolResult, getAdvisoryOut, error) {
	tl, err := t.cfg.Sessions.Advise(ctx, t.tenant, in.Task)
	if err != nil {
		return nil, getAdvisoryOut{}, t.toolError(ToolGetAdvisory, err)
	}
	if tl == nil {
		out := getAdvisoryOut{Decision: sessions.LearnOff}
		return text("No advisory: learning across tasks is off on this Hippocam server."), out, nil
	}
	out := getAdvisoryOut{Decision: tl.Decision, Cluster: tl.Cluster, System: tl.System, Reason: tl.Reason, Advisory: tl.Advisory, AdvisoryTokens: tl.AdvisoryTokens}
	var b strings.Builder
	switch {
	case out.Cluster == "":
		fmt.Fprintf(&b, "No cluster for this task (%s)", out.Decision)
		if out.Reason != "" {
			fmt.Fprintf(&b, ": %s", out.Reason)
		}
		b.WriteString(". There is no advisory.")
	case out.Advisory == "":
		fmt.Fprintf(&b, "The task belongs to cluster %s (%s, %s); it holds no advice for it yet.", out.Cluster, out.System, out.Decision)
	default:
		fmt.Fprintf(&b, "The task belongs to cluster %s (%s, %s). Its advisory:\n\n%s", out.Cluster, out.System, out.Decision, out.Advisory)
	}
	return text(b.String()), out, nil
}

// report_outcome

type reportOutcomeIn struct {
	Session  string   `json:"session" jsonschema:"the session that ran the task"`
	Feedback string   `json:"feedback" jsonschema:"how the task went, in words: what was right, what was wrong and why"`
	Success  *bool    `json:"success,omitempty" jsonschema:"whether the task succeeded"`
	Reward   *float64 `json:"reward,omitempty" jsonschema:"a score for the outcome"`
}

type reportOutcomeOut struct {
	Session string `json:"session"`
	Ended   bool   `json:"ended"`
	Cluster string `json:"cluster,omitempty" jsonschema:"the cluster the task was routed to, which learns from it"`
	// Update is "done" (the cluster learned from the task), "queued" (a job will) or "none"
	// (the task was routed to no cluster).
	Update string `json:"update" jsonschema:"done (the cluster learned from the task), queued (a job will) or none (the task had no cluster)"`
}

func (t *tenantServer) reportOutcome(ctx context.Context, _ *sdk.CallToolRequest, in reportOutcomeIn) (*sdk.CallToolResult, reportOutcomeOut, error) {
	if err := t.checkSession(ctx, in.Session); err != nil {
		return nil, reportOutcomeOut{}, t.toolError(ToolReportOutcome, err)
	}
	o := sessions.Outcome{Feedback: in.Feedback, Success: in.Success, Reward: in.Reward}
	rep, err := t.cfg.Sessions.ReportOutcome(ctx, t.tenant, in.Session, o, t.cfg.WaitForUpdates)
	if err != nil {
		if hippocam.ErrorCode(err) == hippocam.ENOTFOUND {
			err = sessionNotFound(in.Session)
		}
		return nil, reportOutcomeOut{}, t.toolError(ToolReportOutcome, err)
	}
	out := reportOutcomeOut{Session: rep.Session.ID, Ended: true, Cluster: rep.Cluster, Update: rep.Update}
	if rep.UpdateErr != nil { // ended and queued, but the update that ran at once failed: the job retries it
		t.log.Warn("mcp: the outcome's cluster update failed; its job will retry", logTenant, t.tenant, logSession, rep.Session.ID, logError, rep.UpdateErr)
	}
	msg := fmt.Sprintf("Session %s has ended.", out.Session)
	switch out.Update {
	case sessions.UpdateDone:
		msg += fmt.Sprintf(" Cluster %s has learned from it.", out.Cluster)
	case sessions.UpdateQueued:
		if out.Cluster == "" {
			msg += " Its task is being routed; the cluster it goes to will learn from it shortly."
		} else {
			msg += fmt.Sprintf(" Cluster %s will learn from it shortly.", out.Cluster)
		}
	default:
		msg += " Its task was routed to no cluster, so nothing learns from it."
	}
	return text(msg), out, nil
}

// search_lessons

type searchLessonsIn struct {
	Query string `json:"query" jsonschema:"words the lessons must hold (in their decision, conditions or evidence); empty: every lesson in force"`
}

type searchLessonsOut struct {
	Query   string   `json:"query"`
	Lessons []Lesson `json:"lessons"`
}

func (t *tenantServer) searchLessons(ctx context.Context, _ *sdk.CallToolRequest, in searchLessonsIn) (*sdk.CallToolResult, searchLessonsOut, error) {
	fail := func(err error) (*sdk.CallToolResult, searchLessonsOut, error) {
		return nil, searchLessonsOut{}, t.toolError(ToolSearchLessons, err)
	}
	var q *hippocam.SearchQuery
	if strings.TrimSpace(in.Query) != "" {
		parsed, err := hippocam.ParseSearchQuery(in.Query)
		if err != nil {
			return fail(err)
		}
		q = &parsed
	}
	active, err := t.cfg.Sessions.Lessons(ctx, t.tenant, sessions.LessonFilter{Status: library.LessonActive})
	if err != nil {
		return fail(err)
	}
	out := searchLessonsOut{Query: in.Query, Lessons: []Lesson{}}
	for _, l := range active {
		if q == nil || q.Matches(lessonText(&l)) {
			out.Lessons = append(out.Lessons, l)
		}
	}
	return text(lessonsText(&out)), out, nil
}

// lessonText is what search_lessons matches a query against.
func lessonText(l *Lesson) string {
	parts := []string{l.Key, l.Value, l.Rule, l.Decision, l.Evidence}
	parts = append(parts, l.When...)
	parts = append(parts, l.NotWhen...)
	return strings.Join(parts, "\n")
}

func lessonsText(o *searchLessonsOut) string {
	var b strings.Builder
	if len(o.Lessons) == 0 {
		if strings.TrimSpace(o.Query) == "" {
			return "No lesson is in force."
		}
		return fmt.Sprintf("No lesson in force holds all of %q.", o.Query)
	}
	b.WriteString(count(len(o.Lessons), "lesson", "lessons") + " in force:")
	for _, l := range o.Lessons {
		fmt.Fprintf(&b, "\n- %s (cluster %s): %s", l.ID, l.Cluster, l.Rule)
		if len(l.When) > 0 {
			fmt.Fprintf(&b, "\n  when: %s", strings.Join(l.When, ", "))
		}
		if len(l.NotWhen) > 0 {
			fmt.Fprintf(&b, "\n  not when: %s", strings.Join(l.NotWhen, ", "))
		}
		if l.Evidence != "" {
			fmt.Fprintf(&b, "\n  evidence: %s", l.Evidence)
		}
		fmt.Fprintf(&b, "\n  learned from tasks %s (attempts %s)", strings.Join(l.Provenance.Tasks, ", "), strings.Join(l.Provenance.Attempts, ", "))
	}
	return b.String()
}

// checkSession returns nil if the tenant has the session, else the one not-found error (or the
// store's failure). EINVALID for an empty id.
func (t *tenantServer) checkSession(ctx context.Context, id string) error {
	if strings.TrimSpace(id) == "" {
		return hippocam.Errorf(hippocam.EINVALID, "session: name a session (list_sessions gives their ids)")
	}
	_, _, err := t.cfg.Store.SessionVersion(ctx, t.tenant, id)
	if hippocam.ErrorCode(err) == hippocam.ENOTFOUND {
		return sessionNotFound(id)
	}
	return err
}

// text is a tool result whose content is s (the structured result is added by the SDK).
func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// count writes n with the singular or plural noun.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
