package engine

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
)

// The main model answers from the context (Alg. 1, line 4). Hippocam adds its memory
// instructions (appendix B.2.4) as a system message ahead of the agent's own, and the recall tool
// beside the agent's tools; it answers recall calls itself, bounded by RecallLimit, and runs
// pressure control before every call.

//go:embed prompts/agent.txt
var agentPrompt string

// recallSection heads the part of the main model's prompt that teaches recall and search (its
// last section), left out by the no-recall ablation.
const recallSection = "# Recall and search"

// systemPrompt is the system message of every request but JANUS's: the main model's memory
// instructions and, with SharedPrompts, the role prompts and answer formats of PRECIP and PALIM,
// so that their requests, which share this prefix, end with a short instruction only.
func (e *Engine) systemPrompt() string { return e.system }

func buildSystemPrompt(shared, noRecall bool) string {
	agentPrompt := agentPrompt
	if noRecall {
		// The no-recall ablation: the tools are gone, and so is what teaches them.
		if k := strings.Index(agentPrompt, recallSection); k >= 0 {
			agentPrompt = strings.TrimRight(agentPrompt[:k], "\n") + "\n"
		}
	}
	if !shared {
		return agentPrompt
	}
	var b strings.Builder
	b.WriteString(agentPrompt)
	b.WriteString("\n\n# Hippocam's maintenance roles\nSome requests in this conversation are not addressed to you as the assistant: their last message starts with \"Request for\" and names one of the roles below. Answer those in that role, with one JSON object following the role's schema, and nothing else. Ignore this section otherwise.\n")
	for _, r := range []struct {
		name, prompt string
		tool         hippocam.Tool
	}{{"PRECIP", precipPrompt, PrecipToolSpec}, {"PALIM", palimPrompt, PalimToolSpec}} {
		// JANUS's prompt is not here: its requests are views of their own that carry it
		// (janusView), and they share no prefix with the main model's.
		fmt.Fprintf(&b, "\n## Role %s\n%s\nSchema of the answer: %s\n", r.name, strings.TrimSpace(r.prompt), r.tool.Parameters)
	}
	return b.String()
}

// agentFrame is what a main-model request adds to the context: the memory instructions, the
// agent's framing (its own system and developer messages) and the tool schemas.
func (st *step) agentFrame(withRecall bool) int {
	i := 0
	if withRecall {
		i = 1
	}
	if st.frame[i] == 0 {
		agent, recall := st.toolTokens(withRecall)
		st.frame[i] = hippocam.RequestTokens(st.e.tok, st.requestHead(), nil) + agent + recall
	}
	return st.frame[i]
}

// toolTokens is the size of the agent's tools and of recall and search in the main model's
// requests (agentTools), counted once a step.
func (st *step) toolTokens(withRecall bool) (agent, recall int) {
	i := 0
	if withRecall {
		i = 1
	}
	if t := &st.tools[i]; !t.counted {
		tools := st.agentTools(withRecall)
		for k := range tools {
			n := st.e.toolSizes.count(st.e.tok, &tools[k])
			if name := tools[k].Name; name == RecallTool || name == SearchTool {
				t.recall += n
			} else {
				t.agent += n
			}
		}
		t.counted = true
	}
	return st.tools[i].agent, st.tools[i].recall
}

// agentRequest builds the main-model request over the current context.
func (st *step) agentRequest(withRecall bool) *hippocam.Request {
	choice := st.in.ToolChoice
	if !withRecall && choice == RecallTool {
		choice = ""
	}
	return &hippocam.Request{Role: hippocam.CallAgent, Model: st.in.Model, Messages: st.requestPrefix(len(st.s.Context)),
		Tools: st.agentTools(withRecall), ToolChoice: choice, MaxTokens: st.in.MaxTokens,
		Extra: st.in.Extra, ExtraFormat: st.in.ExtraFormat, Betas: st.in.Betas}
}

// measure counts the main-model request req (its tools: agentTools(withRecall)) as
// hippocam.RequestTokens does, and breaks the total into its parts: Hippocam's system message
// (with the request's priming), the agent's framing, the agent's tools, recall and search, what
// Hippocam put in the context (memories, guidance, the step's recall exchanges) and the agent's
// messages kept whole.
func (st *step) measure(req *hippocam.Request, withRecall bool) hippocam.RequestSize {
	var r hippocam.RequestSize
	framing := len(st.in.Framing)
	r.Tools, r.RecallTools = st.toolTokens(withRecall)
	r.Total = hippocam.RequestTokens(st.e.tok, nil, nil) + r.Tools + r.RecallTools // and each message's, below
	for i := range req.Messages {
		m := &req.Messages[i]
		n := m.Tokens
		if n <= 0 {
			n = hippocam.MessageTokens(st.e.tok, m)
		}
		r.Total += n
		switch {
		case i == 0:
			// Hippocam's system message: counted below, with the priming.
		case i <= framing:
			r.Framing += n
		case m.Kind == hippocam.KindRaw && !st.exchange(m):
			r.Messages += n
		default:
			r.Memory += n
		}
	}
	r.System = r.Total - r.Framing - r.Tools - r.RecallTools - r.Memory - r.Messages
	return r
}

// agentTools is the tool list of the main model's requests: the agent's own tools, then recall
// and search (search.go), which are offered together. The no-prefix ablation offers recall
// alone: search, which is Hippocam's addition to the paper, would find what its truncation
// dropped from view and so undo the ablation.
func (st *step) agentTools(withRecall bool) []hippocam.Tool {
	tools := append([]hippocam.Tool(nil), st.in.Tools...)
	if withRecall {
		tools = append(tools, RecallToolSpec)
		if !st.e.cfg.Ablations.NoPrefix {
			tools = append(tools, SearchToolSpec)
		}
	}
	return tools
}

// answer obtains the main model's final answer. Recall exchanges stay in the context only while
// the step lasts; then they leave it and travel with the answer as its Trace.
func (st *step) answer(ctx context.Context) error {
	full := map[string]string{} // recall results as first shown, before shrinking
	var trace []hippocam.Message
	recallOpen := !st.e.cfg.Ablations.NoRecall
	for {
		err := st.pressureControl(ctx)
		if hippocam.ErrorCode(err) == hippocam.ECAPACITY && len(trace) > 0 && recallOpen {
			// The recall exchanges themselves leave no room: withdraw the latest results and
			// let the model answer with what it has.
			st.withdrawRecalls()
			recallOpen = false
			err = st.pressureControl(ctx)
		}
		if err != nil {
			return err
		}
		withRecall := recallOpen && st.res.RecallCalls < st.e.cfg.RecallLimit
		req := st.agentRequest(withRecall)
		size := st.measure(req, withRecall)
		n := size.Total
		if n > st.e.cfg.Window {
			return hippocam.Capacityf(n, st.e.cfg.Window, "the request needs %d tokens but the context window is %d", n, st.e.cfg.Window)
		}
		st.res.MaxRequestTokens = max(st.res.MaxRequestTokens, n)
		if st.in.OnCall != nil {
			st.in.OnCall(n)
		}
		resp, streamed, err := st.agentCall(ctx, req)
		if err != nil {
			return fmt.Errorf("main model: %w", err)
		}
		size.Reported, size.ReportedCached = resp.Usage.Input, resp.Usage.CachedInput
		st.s.Transcript.Request = &size
		msg := resp.Message
		msg.Role, msg.Kind = hippocam.RoleAssistant, hippocam.KindRaw
		msg.ID = st.s.NextID("m")
		uniqueCallIDs(&msg)
		// The answer's text is the text of every main response of the step: what a model wrote
		// before it called recall or search is part of it (a streaming client has it already).
		if !streamed {
			st.emitPart(msg.Content)
		}
		if !withRecall || !callsRecall(&msg) {
			msg.Content = st.answerText.String()
			shown := st.recallExchanges()
			st.finish(msg, resp.FinishReason, trace, full)
			return st.reinforce(ctx, shown)
		}
		msg.Tokens = hippocam.MessageTokens(st.e.tok, &msg)
		st.transient(msg)
		trace = append(trace, msg)
		trace = append(trace, st.answerRecalls(ctx, &msg, full)...)
	}
}

// recallOffered reports whether the step's first main-model call offers recall and search.
func (st *step) recallOffered() bool {
	return !st.e.cfg.Ablations.NoRecall && st.e.cfg.RecallLimit > 0
}

// agentCall makes one main-model call, streamed to Input.OnText when the caller asked for the
// text as it comes. streamed reports whether the call's text reached OnText piece by piece.
func (st *step) agentCall(ctx context.Context, req *hippocam.Request) (_ *hippocam.Response, streamed bool, _ error) {
	_, canStream := st.e.model.(hippocam.StreamModel)
	streamed = canStream && st.in.OnText != nil
	st.partStarted = false
	t0 := time.Now()
	resp, err := st.e.complete(ctx, req, st.in.OnText != nil, func(text string) error { st.emit(text); return nil })
	if err == nil && streamed && !st.partStarted {
		st.emitPart(resp.Message.Content) // a stream that sent its text only with the response
	}
	st.res.ModelTime += time.Since(t0)
	if err != nil {
		return nil, false, err
	}
	st.res.Usage.Add(req.Role, resp.Usage, st.e.cfg.Prices)
	return resp, streamed, nil
}

// complete makes one main-model call: streamed when stream is set and the model can stream,
// with every piece of text passed to piece; otherwise a plain call.
func (e *Engine) complete(ctx context.Context, req *hippocam.Request, stream bool, piece func(string) error) (*hippocam.Response, error) {
	if sm, ok := e.model.(hippocam.StreamModel); ok && stream {
		return sm.CompleteStream(ctx, req, piece)
	}
	return e.model.Complete(ctx, req)
}

// emit passes a piece of the current main response's text to the caller and adds it to the
// answer: the answer the step keeps is exactly the text the caller received. The text of a
// response after another one's is set apart by a blank line.
func (st *step) emit(text string) {
	if text == "" {
		return
	}
	if !st.partStarted {
		st.partStarted = true
		if st.answerText.Len() > 0 {
			text = "\n\n" + text
		}
	}
	st.answerText.WriteString(text)
	if st.in.OnText != nil {
		st.in.OnText(text)
	}
}

// emitPart is emit for the whole text of a response that did not stream.
func (st *step) emitPart(text string) {
	st.partStarted = false
	st.emit(text)
}

// answerRecalls answers the calls of one model answer that called recall or search, in order:
// recall calls with one layer (or a page) each, search calls with a page of their hits, other
// calls with a note that they were not run. Results of earlier answers shrink to their listings
// once one of these recalls opens something. A result that does not fit the room left even as
// its smallest page takes room from the step's earlier results (giveRoom); only when none is
// left to take does the model read that the window is full. The room never reaches into the
// reserve for the answer (recallRoom).
func (st *step) answerRecalls(ctx context.Context, msg *hippocam.Message, full map[string]string) []hippocam.Message {
	results := make([]hippocam.Message, len(msg.ToolCalls))
	targets := make([]recallTarget, len(msg.ToolCalls))
	searches := make([]searchOutcome, len(msg.ToolCalls))
	reserve, opened := 0, false
	for i, c := range msg.ToolCalls {
		results[i] = hippocam.Message{ID: st.s.NextID("m"), Role: hippocam.RoleTool, Kind: hippocam.KindRaw, ToolCallID: c.ID}
		if !internalTool(c) {
			results[i].Content = "Not run: a recall or search was made in the same answer. Call " + c.Name + " again after reading its result."
			results[i].Tokens = hippocam.MessageTokens(st.e.tok, &results[i])
			reserve += results[i].Tokens
			continue
		}
		st.res.RecallCalls++ // searches count too: RecallLimit bounds both
		if c.Name == SearchTool {
			st.res.SearchCalls++
			searches[i] = st.search(ctx, c.Arguments)
			continue
		}
		targets[i] = st.resolve(ctx, c.Arguments)
		opened = opened || targets[i].problem == ""
	}
	if opened {
		st.shrinkRecalls() // a deeper layer is opening: earlier results give up their room
	}
	for i, c := range msg.ToolCalls {
		r := &results[i]
		if internalTool(c) {
			draw := func() (string, string, bool) {
				if c.Name == SearchTool {
					return st.renderSearch(searches[i], st.recallRoom()-reserve)
				}
				return st.render(targets[i], st.recallRoom()-reserve)
			}
			shown, listing, ok := draw()
			for !ok && st.giveRoom() {
				shown, listing, ok = draw() // the step's earlier results made room: try again
			}
			r.Content = shown
			r.Tokens = hippocam.MessageTokens(st.e.tok, r)
			full[r.ID] = shown
			if listing != "" {
				st.listings[r.ID] = listing
			}
		} else {
			reserve -= r.Tokens
		}
		st.transient(*r)
	}
	return results
}

// uniqueCallIDs gives every tool call of m a non-empty id unique within m: some servers return
// empty or repeated ids, which would make its results impossible to match.
func uniqueCallIDs(m *hippocam.Message) {
	seen := map[string]bool{}
	for i := range m.ToolCalls {
		c := &m.ToolCalls[i]
		if c.ID == "" || seen[c.ID] {
			c.ID = fmt.Sprintf("call_%s_%d", m.ID, i)
		}
		seen[c.ID] = true
	}
}

// callsRecall reports whether m calls recall or search, the tools the engine answers itself.
func callsRecall(m *hippocam.Message) bool {
	for _, c := range m.ToolCalls {
		if internalTool(c) {
			return true
		}
	}
	return false
}

// withdrawnNote replaces a recall or search result that gave its room to a later one.
const withdrawnNote = "Withdrawn to make room for a later recall or search result; call it again if you still need it."

// giveRoom frees room for a recall or search result that does not fit even as one page: the
// step's earlier results shrink to their listings first; after that, oldest first, one result a
// call gives way to withdrawnNote. false when nothing is left to give.
func (st *step) giveRoom() bool {
	if st.shrinkRecalls() > 0 {
		return true
	}
	for i := range st.s.Context {
		m := &st.s.Context[i]
		if !st.recallIDs[m.ID] || m.Role != hippocam.RoleTool || m.Content == withdrawnNote {
			continue
		}
		note := hippocam.Message{ID: m.ID, Role: m.Role, Kind: m.Kind, ToolCallID: m.ToolCallID, Content: withdrawnNote}
		if n := hippocam.MessageTokens(st.e.tok, &note); n < m.Tokens {
			m.Content, m.Tokens = withdrawnNote, n
			delete(st.listings, m.ID) // a later shrink must not bring it back
			return true
		}
	}
	return false
}

// withdrawRecalls replaces the latest recall results with a short note and the earlier ones with
// their listings, when the exchanges leave no room for another call.
func (st *step) withdrawRecalls() {
	st.shrinkRecalls()
	for i := len(st.s.Context) - 1; i >= 0; i-- {
		m := &st.s.Context[i]
		if !st.recallIDs[m.ID] || m.Role != hippocam.RoleTool {
			break
		}
		m.Content = "Withdrawn: no room is left in the context window for this recall result. Answer with what you have."
		m.Tokens = hippocam.MessageTokens(st.e.tok, m)
	}
}

// transient appends a recall-exchange message to the context for the rest of the step only.
func (st *step) transient(m hippocam.Message) {
	st.s.Context = append(st.s.Context, m)
	st.recallIDs[m.ID] = true
}

// shrinkRecalls reduces the recall results already in the context to their listings: the model
// is opening a deeper layer, and the listing keeps every handle. It returns the tokens freed.
func (st *step) shrinkRecalls() int {
	freed := 0
	for i := range st.s.Context {
		m := &st.s.Context[i]
		if listing, ok := st.listings[m.ID]; ok && m.Content != listing {
			before := m.Tokens
			m.Content = listing
			m.Tokens = hippocam.MessageTokens(st.e.tok, m)
			freed += before - m.Tokens
		}
	}
	return freed
}

// finish removes the recall exchanges from the context and appends the final answer, carrying
// them as its trace (with each result as it was first shown).
func (st *step) finish(msg hippocam.Message, reason string, trace []hippocam.Message, full map[string]string) {
	if first := st.firstRecall(); first >= 0 {
		// In place from the first exchange on: the exchanges were appended by this step, after
		// every message another copy of the session shares (those are never written).
		kept := st.s.Context[:first]
		for _, m := range st.s.Context[first:] {
			if !st.recallIDs[m.ID] {
				kept = append(kept, m)
			}
		}
		st.s.Context = kept
	}
	for i := range trace {
		if text, ok := full[trace[i].ID]; ok {
			trace[i].Content = text
			trace[i].Tokens = hippocam.MessageTokens(st.e.tok, &trace[i])
		}
	}
	if callsRecall(&msg) { // the model called recall or search although they were no longer offered
		var calls []hippocam.ToolCall
		for _, c := range msg.ToolCalls {
			if !internalTool(c) {
				calls = append(calls, c)
			}
		}
		msg.ToolCalls = calls
		if len(calls) == 0 && reason == "tool_calls" {
			reason = "stop"
		}
	}
	msg.Ref, msg.Knowledge = "", nil
	msg.Trace = trace
	msg.Tokens = hippocam.MessageTokens(st.e.tok, &msg)
	st.push(msg)
	if len(msg.ToolCalls) == 0 {
		st.s.AddRound(msg.Tokens) // a round without tool calls ends with its answer
	}
	st.res.Answer = msg
	st.res.FinishReason = reason
}

// firstRecall is the index of the first recall exchange in the context, -1 when there is none.
func (st *step) firstRecall() int {
	if len(st.recallIDs) == 0 {
		return -1
	}
	for i := range st.s.Context {
		if st.recallIDs[st.s.Context[i].ID] {
			return i
		}
	}
	return -1
}

// recallRoom is the room, in tokens, a recall result may take: what the window has left after
// the current request and the reserve for the next round (docs/architecture.md §3) or for the answer,
// whichever is larger. If that pushes the context over ρW, pressure control folds older regions
// before the next call; the current step, recall exchanges included, is protected.
func (st *step) recallRoom() int {
	const margin = 16
	reserve := max(roundQuantile(st.s.Rounds, st.e.cfg.Quantile), st.answerReserve())
	used := st.contextTokens() + st.agentFrame(true) + reserve
	return st.e.cfg.Window - used - margin - 4
}
