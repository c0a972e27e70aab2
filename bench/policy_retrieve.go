package bench

import (
	"context"
	"errors"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// retrieve-prepend is the mem0-style baseline: facts are extracted from every turn into a store,
// and the facts most similar to the latest user message are prepended to every main request.
//
//   - Extraction: after the main answer, one call with role precip and the engine's PRECIP
//     contract (tool engine.PrecipToolSpec, answer engine.PrecipOutput) reads the step's new
//     messages and the answer, rendered as one transcript message, under this package's own
//     extraction prompt. The lines of its answer of the form `KEY := VALUE` (after an optional
//     list marker and evaluation tag) are the extracted facts; everything else, impressions of
//     details included, is dropped. An extractor, like mem0's, keeps what it recognizes as facts
//     and loses the particulars it was not asked for. A transcript too large for one request is
//     extracted in several calls, message by message.
//   - Update: the store holds one value per key; a new value for a key replaces the old one
//     (mem0's update phase), and the key counts as the most recently updated.
//   - Retrieval: before every main call, the top k = 10 facts by Okapi BM25 (k1 = 1.2,
//     b = 0.75) between the latest user message and each fact's key and value are prepended,
//     ahead of the conversation, as one user message "Relevant memories: …", best first. Terms
//     are lower-cased words split at anything but letters and digits, plus every whole word that
//     holds '_', '.' or '-' (so a key like shop_owner matches itself as well as shop and owner).
//     Ties, zero scores included, go to the most recently updated fact: like a vector search,
//     retrieval always returns k facts when the store has them.
//   - The conversation is then truncated as the truncate policy does, until the whole request
//     (system prompt, memories, conversation) is at most ρW.
//
// The memories message changes with every query, so the cached prefix of the main request ends
// at the system prompt: the cost characteristic of prepending retrieval (the Hippocam paper §A.9), kept
// as it is.

// retrieveTopK is k, the number of facts prepended to every main request.
const retrieveTopK = 10

// BM25 parameters.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// extractorPrompt is the extraction call's system prompt.
const extractorPrompt = `You extract facts from one turn of a conversation between a user and an assistant (the user's messages, the results of the assistant's tools and the assistant's answer), for a long-term memory store. You read the turn from the outside; you never answer or continue it.

Write every fact the turn states, one per line, as KEY := VALUE, with the exact key and value. Leave out everything else.

Answer only by calling ` + engine.PrecipTool + `.`

// extractorInstruction is the final message of an extraction request.
const extractorInstruction = "Extract the facts stated in the turn above, one per line as KEY := VALUE. Call " + engine.PrecipTool + "."

// memoriesHeader begins the memories message.
const memoriesHeader = "Relevant memories (facts remembered from earlier in this conversation, most relevant first):"

// storedFact is one fact of the store.
type storedFact struct {
	key, value string
	updated    int // update counter when it last changed
	terms      []string
}

type retrieveAgent struct {
	env   Env
	p     baselineParams
	log   *chatLog
	sys   hippocam.Message
	facts map[string]*storedFact
	// updates counts the store's updates.
	updates int
	// lastUser is the content of the latest user message.
	lastUser       string
	extractorFrame int
}

func newRetrieveAgent(env Env) (Agent, error) {
	if err := checkEnv(env); err != nil {
		return nil, err
	}
	return &retrieveAgent{
		env: env, p: paramsFor(env.Window), log: newChatLog(env.Tok), sys: systemMessage(env.Tok),
		facts:          map[string]*storedFact{},
		extractorFrame: frameTokens(env.Tok, extractorPrompt, extractorInstruction, engine.PrecipToolSpec),
	}, nil
}

// Step appends the step's messages, prepends the retrieved facts, truncates, asks the main model
// and extracts the turn's facts into the store.
func (a *retrieveAgent) Step(ctx context.Context, in []hippocam.Message) (*Turn, error) {
	m := newStepMeter(a.env)
	if err := a.log.add(in); err != nil {
		return nil, err
	}
	for _, msg := range in {
		if msg.Role == hippocam.RoleUser {
			a.lastUser = msg.Content
		}
	}
	frame := []hippocam.Message{a.sys}
	if mem, ok := a.memories(a.lastUser); ok {
		frame = append(frame, mem)
	}
	a.log.dropOldest(hippocam.RequestTokens(a.env.Tok, frame, nil), a.p.target)
	resp, err := m.mainCall(ctx, a.log.request(frame...))
	if err != nil {
		return nil, err
	}
	answer := a.log.answer(resp)
	turn := append(append([]hippocam.Message(nil), in...), answer)
	if err := a.extract(ctx, m, turn); err != nil {
		return nil, err
	}
	return m.finish(answer), nil
}

// memories returns the memories message for query, or false when the store is empty.
func (a *retrieveAgent) memories(query string) (hippocam.Message, bool) {
	top := a.retrieve(query, retrieveTopK)
	if len(top) == 0 {
		return hippocam.Message{}, false
	}
	var b strings.Builder
	b.WriteString(memoriesHeader)
	for _, f := range top {
		b.WriteString("\n- " + f.key + " := " + f.value)
	}
	return sized(a.env.Tok, hippocam.Message{Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: b.String()}), true
}

// retrieve returns the k facts with the highest BM25 score for query, best first; ties go to the
// most recently updated.
func (a *retrieveAgent) retrieve(query string, k int) []*storedFact {
	if len(a.facts) == 0 || k <= 0 {
		return nil
	}
	docs := make([]*storedFact, 0, len(a.facts))
	df := map[string]int{}
	total := 0
	for _, f := range a.facts {
		docs = append(docs, f)
		total += len(f.terms)
		seen := map[string]bool{}
		for _, t := range f.terms {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		}
	}
	avg := float64(total) / float64(len(docs))
	q := uniqueTerms(query)
	scores := make(map[*storedFact]float64, len(docs))
	n := float64(len(docs))
	for _, f := range docs {
		tf := map[string]int{}
		for _, t := range f.terms {
			tf[t]++
		}
		s := 0.0
		for _, t := range q {
			c := float64(tf[t])
			if c == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
			norm := 1 - bm25B
			if avg > 0 {
				norm += bm25B * float64(len(f.terms)) / avg
			}
			s += idf * c * (bm25K1 + 1) / (c + bm25K1*norm)
		}
		scores[f] = s
	}
	sort.Slice(docs, func(i, j int) bool {
		si, sj := scores[docs[i]], scores[docs[j]]
		if si != sj {
			return si > sj
		}
		return docs[i].updated > docs[j].updated
	})
	return docs[:min(k, len(docs))]
}

// extract runs the extraction over the turn's messages and updates the store with what comes
// back. A chunk whose extraction keeps breaking the contract adds nothing.
func (a *retrieveAgent) extract(ctx context.Context, m *stepMeter, turn []hippocam.Message) error {
	room := a.p.window - a.extractorFrame - a.p.answerRoom
	var parts []string
	used := 0
	flush := func() error {
		if len(parts) == 0 {
			return nil
		}
		text := "Conversation turn:\n\n" + strings.Join(parts, "\n\n")
		parts, used = nil, 0
		out, err := a.extractor(ctx, m, text)
		if errors.Is(err, errBrokenContract) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, f := range parseFactLines(out.Memory) {
			a.update(f[0], f[1])
		}
		return nil
	}
	for _, msg := range turn {
		part := transcriptPart(&msg)
		n := a.env.Tok.Count(part) + 2
		if used > 0 && used+n > room {
			if err := flush(); err != nil {
				return err
			}
		}
		parts = append(parts, part)
		used += n
	}
	return flush()
}

// transcriptPart renders one message of a turn for the extractor.
func transcriptPart(m *hippocam.Message) string {
	who := "[" + string(m.Role) + "]"
	switch m.Role {
	case hippocam.RoleTool:
		who = "[tool result]"
	case hippocam.RoleAssistant:
		if len(m.ToolCalls) > 0 {
			var names []string
			for _, c := range m.ToolCalls {
				names = append(names, c.Name)
			}
			who = "[assistant, calling " + strings.Join(names, ", ") + "]"
		}
	}
	return who + "\n" + m.Content
}

// extractor makes one extraction call over a transcript.
func (a *retrieveAgent) extractor(ctx context.Context, m *stepMeter, transcript string) (*engine.PrecipOutput, error) {
	msgs := []hippocam.Message{
		{Role: hippocam.RoleSystem, Content: extractorPrompt},
		{Role: hippocam.RoleUser, Content: transcript},
		{Role: hippocam.RoleUser, Content: extractorInstruction},
	}
	var out engine.PrecipOutput
	err := m.contractAnswer(ctx, hippocam.CallPrecip, msgs, engine.PrecipToolSpec, func(args string) error {
		out = engine.PrecipOutput{}
		if err := strictDecode(args, &out); err != nil {
			return err
		}
		return out.Validate()
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// update stores value under key, replacing an earlier value.
func (a *retrieveAgent) update(key, value string) {
	a.updates++
	f := a.facts[key]
	if f == nil {
		f = &storedFact{key: key}
		a.facts[key] = f
	}
	if f.value != value || f.terms == nil {
		f.value = value
		f.terms = append(textTerms(key), textTerms(value)...)
	}
	f.updated = a.updates
}

// parseFactLines returns the [key, value] pairs of the `KEY := VALUE` lines of text, in order.
// A line may start with a list marker and an evaluation tag; lines about details ("detail …")
// are not facts and are skipped.
func parseFactLines(text string) [][2]string {
	var out [][2]string
	for _, raw := range strings.Split(text, "\n") {
		t := strings.TrimSpace(raw)
		for _, mark := range []string{"- ", "* ", "• "} {
			if rest, ok := strings.CutPrefix(t, mark); ok {
				t = strings.TrimSpace(rest)
				break
			}
		}
		for _, tag := range []string{"[neutral]", "[good]", "[bad]"} {
			if rest, ok := strings.CutPrefix(t, tag); ok {
				t = strings.TrimSpace(rest)
				break
			}
		}
		if strings.HasPrefix(t, "detail ") {
			continue
		}
		n := factKeyLen(t)
		if n == 0 {
			continue
		}
		value, ok := strings.CutPrefix(strings.TrimLeft(t[n:], " \t"), ":=")
		if !ok {
			continue
		}
		out = append(out, [2]string{t[:n], strings.TrimSpace(value)})
	}
	return out
}

// factKeyLen is the length of the key at the start of t: letters, digits, '_', '.' and '-'.
func factKeyLen(t string) int {
	for i, r := range t {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '.' && r != '-' {
			return i
		}
	}
	return len(t)
}

// textTerms returns the BM25 terms of text, with repetitions: lower-cased runs of letters and
// digits, plus every whole word (trimmed of other punctuation) that joins such runs with '_',
// '.' or '-'.
func textTerms(text string) []string {
	var terms []string
	for _, w := range strings.Fields(strings.ToLower(text)) {
		w = strings.TrimFunc(w, func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		})
		if w == "" {
			continue
		}
		parts := strings.FieldsFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if len(parts) > 1 && factKeyLen(w) == len(w) {
			terms = append(terms, w)
		}
		terms = append(terms, parts...)
	}
	return terms
}

// uniqueTerms returns the distinct terms of text, in order of first appearance.
func uniqueTerms(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range textTerms(text) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
