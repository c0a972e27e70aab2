package engine

import (
	"context"
	_ "embed"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam"
)

// PALIM (the Hippocam paper §2.4, appendix B.2.3) consolidates a prefix into a narrative and knowledge
// items, recursively: earlier memories in the prefix are consolidated again with the rest.

//go:embed prompts/palim.txt
var palimPrompt string

const palimInstruction = "Consolidate those messages into memory: a narrative of what I did and came to, and the knowledge worth keeping, one fact per item with its evaluation."

// SizeMarker begins the line of a PALIM request that names the most words its memory may take
// (decided before the call; palimWords).
const SizeMarker = "Size: keep the memory within"

// sizeLine is the request's size line for a memory of at most words words, with what they are
// measured against.
func sizeLine(words, spanWords, keptWords int) string {
	line := fmt.Sprintf("%s %d words, counting the narrative, your items and the items you keep (the span takes about %d words).", SizeMarker, words, spanWords)
	if keptWords > 0 {
		line += fmt.Sprintf(" The items of earlier memories in the span take about %d words; list those that still hold under keep, by their own refs and labels, so that the limit leaves room for what is new.", keptWords)
	}
	return line
}

// palim asks PALIM for the memory of span [lo, hi) (size tokens), within the words that save
// Δmin, and renders it as a prefix memory with a fresh ref. The caller has checked that the
// knowledge the span carries leaves room for that saving (foldFloor). While the memory saves
// less than Δmin and still has a narrative to shorten, it asks again, up to J times, with the
// same limit and the size it came to; it returns the last version (fold decides whether it is
// good enough).
func (st *step) palim(ctx context.Context, lo, hi, size, level int) (hippocam.Message, error) {
	span := st.s.Context[lo:hi]
	budget := size - st.e.cfg.MinSaving - st.memoryHeader(level)
	words := st.palimWords(span, budget)
	base := SpanLine(st.s.Context, lo, hi) + "\n" + palimInstruction + "\n" + sizeLine(words, st.wordsOf(span, size), keptWords(span))
	instruction := base
	var memory hippocam.Message
	for try := 0; try <= st.e.cfg.ConciseTries; try++ {
		var out PalimOutput
		err := st.contractCall(ctx, hippocam.CallPalim, palimPrompt, st.requestPrefix(hi), lo, hi, nil, instruction, PalimToolSpec, func(args string) error {
			out = PalimOutput{}
			if err := decodeArgs(args, &out); err != nil {
				return err
			}
			return out.Check(st.s.Context[:hi], lo, instruction) // schema and plausibility (plausible.go)
		})
		if err != nil {
			return memory, err
		}
		memory = st.prefixMemory(&out, span, level)
		saving := size - memory.Tokens
		if saving >= st.e.cfg.MinSaving || strings.TrimSpace(out.Narrative) == "" {
			// Saved enough; or the narrative is gone already, and what is left is knowledge,
			// which no request asks PALIM to drop: asking again would not help.
			return memory, nil
		}
		// The limit again, in words as the answer itself spends them per token: the same size.
		body := max(1, memory.Tokens-st.memoryHeader(level))
		have := len(strings.Fields(memory.Content)) - len(strings.Fields(memoryHead(memory.Ref, level)))
		limit := max(1, have*budget/body)
		instruction = fmt.Sprintf("%s\n\n%s: yours came to %d words, and at the length of its words it must stay within %d. Shorten the narrative first, and list unchanged items under keep; keep every knowledge item's particulars.",
			base, ConciseMarker, have, limit)
	}
	return memory, nil
}

// palimWords converts a size in tokens into the words a model is asked for: by the ratio of
// words to tokens of the span itself (the memory is made of its text), at least one word.
func (st *step) palimWords(span []hippocam.Message, budget int) int {
	return max(1, int(float64(budget)*wordsPerToken(span, tokens(span))))
}

// wordsOf is about how many words a text of these messages and size holds.
func (st *step) wordsOf(span []hippocam.Message, size int) int {
	return int(float64(size)*wordsPerToken(span, tokens(span)) + 0.5)
}

// wordsPerToken is the ratio of words (runs without white space) to tokens of the messages'
// text, within [0.3, 1]; 0.75 when they hold no text.
func wordsPerToken(span []hippocam.Message, size int) float64 {
	words := 0
	for i := range span {
		words += len(strings.Fields(span[i].Content))
	}
	if words == 0 || size == 0 {
		return 0.75
	}
	return min(1, max(0.3, float64(words)/float64(size)))
}

// keptWords is about how many words the knowledge items of the span's prefix memories take.
func keptWords(span []hippocam.Message) int {
	n := 0
	for i := range span {
		for _, k := range span[i].Knowledge {
			n += len(strings.Fields(k.Fact)) + 1
		}
	}
	return n
}

// memoryHeader is the size of a prefix memory's first line (what the engine adds to PALIM's
// answer besides the "Narrative:" and "Knowledge:" headings).
func (st *step) memoryHeader(level int) int {
	m := hippocam.Message{Role: hippocam.RoleUser, Kind: hippocam.KindPrefixMemory,
		Content: memoryHead(placeholderRef, level) + "\nNarrative:\nKnowledge:"}
	return hippocam.MessageTokens(st.e.tok, &m)
}

// placeholderRef stands for a memory's ref when only its size matters.
const placeholderRef = "r000000"

// foldFloor is about the least a memory of span [lo, hi) can take when it keeps the knowledge
// the span carries: the header and the items of the prefix memories in it, rendered as the new
// memory would render them, but for those a later item of the span revises (the fold writes
// only the current statement). What the span's other messages add is not counted.
func (st *step) foldFloor(lo, hi, level int) int {
	revised := map[string]bool{}
	for _, m := range st.s.Context[lo:hi] {
		for _, k := range m.Knowledge {
			for _, r := range k.Revises {
				revised[strings.TrimSpace(r)] = true
			}
		}
	}
	var items []hippocam.KnowledgeItem
	for _, m := range st.s.Context[lo:hi] {
		for _, k := range m.Knowledge {
			if !revised[strings.TrimSpace(k.Fact)] {
				items = append(items, k)
			}
		}
	}
	if len(items) == 0 {
		return st.memoryHeader(level)
	}
	return st.renderPrefixMemory(placeholderRef, &PalimOutput{Knowledge: items}, nil, level).Tokens
}

// RevisesMarker begins the line under a knowledge item that names the earlier statements it
// replaces.
const RevisesMarker = "(this replaces the earlier statement"

// RevisesLine is the line that says the line above it replaces earlier statements.
func RevisesLine(earlier ...string) string {
	q := make([]string, len(earlier))
	for i, e := range earlier {
		q[i] = "«" + e + "»"
	}
	s := ""
	if len(q) > 1 {
		s = "s"
	}
	return RevisesMarker + s + " " + strings.Join(q, ", ") + "; the line above is current)"
}

// FitMarker begins the line of a PALIM request that names the size its memory must fit when
// knowledge recedes (the recession rule of palim.txt applies).
const FitMarker = "Fit the whole memory within"

// palimFit asks PALIM for the memory of span [lo, hi) within target tokens, the request that
// lets unused knowledge recede (recede) by the rule its prompt states once. The memory it
// returns may still be too large: the caller checks.
func (st *step) palimFit(ctx context.Context, lo, hi, target, level int) (hippocam.Message, error) {
	span := st.s.Context[lo:hi]
	words := st.palimWords(span, max(target-st.memoryHeader(level), 16))
	instruction := fmt.Sprintf("%s\n%s\n\n%s %d words: the knowledge of this span no longer fits, so let what was brought forward least recently recede by the rule under Size.",
		SpanLine(st.s.Context, lo, hi), palimInstruction, FitMarker, words)
	var out PalimOutput
	err := st.contractCall(ctx, hippocam.CallPalim, palimPrompt, st.requestPrefix(hi), lo, hi, nil, instruction, PalimToolSpec, func(args string) error {
		out = PalimOutput{}
		if err := decodeArgs(args, &out); err != nil {
			return err
		}
		return out.Check(st.s.Context[:hi], lo, instruction) // schema and plausibility (plausible.go)
	})
	if err != nil {
		return hippocam.Message{}, err
	}
	return st.prefixMemory(&out, span, level), nil
}

// memoryHead is the first line of a prefix memory.
func memoryHead(ref string, level int) string {
	return fmt.Sprintf("%s Consolidated memory of my earlier work %s%d) (recall the ref for the messages beneath it).", hippocam.RefTag(ref), levelMark, level)
}

// A prefix memory numbers its knowledge items K1, K2, … (ItemLabel); a later fold names an item
// by the memory's ref and that label, "r12.K3" (KnowledgeID), or a run of them, "r12.K1-K9",
// to keep it unchanged.

// ItemLabel is how a prefix memory labels its i-th knowledge item (from 0): "K1", "K2", ….
func ItemLabel(i int) string { return "K" + strconv.Itoa(i+1) }

// KnowledgeID names the i-th knowledge item (from 0) of the memory with this ref: "r12.K3".
func KnowledgeID(ref string, i int) string { return ref + "." + ItemLabel(i) }

// CutKnowledgeID reads the label a knowledge line begins with (after its list marker): t is
// "K3 [good] …"; it returns the label and the rest ("[good] …"), or ok false when t does not
// begin with a label followed by an evaluation tag.
func CutKnowledgeID(t string) (label, rest string, ok bool) {
	label, rest, found := strings.Cut(t, " ")
	if !found || !itemLabelPattern.MatchString(label) {
		return "", t, false
	}
	rest = strings.TrimLeft(rest, " ")
	if !strings.HasPrefix(rest, "[") {
		return "", t, false
	}
	return label, rest, true
}

var (
	itemLabelPattern = regexp.MustCompile(`^K[0-9]+$`)
	// keepPattern reads a keep entry: REF.Kn or REF.Kn-Km (the second K optional).
	keepPattern = regexp.MustCompile(`^([A-Za-z]+[0-9]+)\.K([0-9]+)(?:-K?([0-9]+))?$`)
)

// prefixMemory renders PALIM's output as the message that replaces span: its narrative, the
// items of span's memories it keeps (copied as they are), then its own items, each
// under its label in the new memory (ItemLabel).
func (st *step) prefixMemory(out *PalimOutput, span []hippocam.Message, level int) hippocam.Message {
	return st.renderPrefixMemory(st.s.NextID("r"), out, span, level)
}

// renderPrefixMemory is prefixMemory under a given ref.
func (st *step) renderPrefixMemory(ref string, out *PalimOutput, span []hippocam.Message, level int) hippocam.Message {
	kept, _ := keptItems(span, out.Keep)
	items := append(kept, out.Knowledge...)
	var b strings.Builder
	b.WriteString(memoryHead(ref, level) + "\n")
	if n := strings.TrimSpace(out.Narrative); n != "" {
		b.WriteString("Narrative:\n")
		b.WriteString(n)
		b.WriteString("\n")
	}
	if len(items) > 0 {
		b.WriteString("Knowledge:\n")
		for i, k := range items {
			fmt.Fprintf(&b, "%s [%s] %s\n", ItemLabel(i), k.Evaluation, strings.TrimSpace(k.Fact))
			var revises []string
			for _, r := range k.Revises {
				if r = strings.TrimSpace(r); r != "" {
					revises = append(revises, r)
				}
			}
			if len(revises) > 0 {
				b.WriteString("  " + RevisesLine(revises...) + "\n")
			}
		}
	}
	m := hippocam.Message{
		Role:      hippocam.RoleUser,
		Kind:      hippocam.KindPrefixMemory,
		Ref:       ref,
		Content:   strings.TrimRight(b.String(), "\n"),
		Knowledge: items,
	}
	m.Tokens = hippocam.MessageTokens(st.e.tok, &m)
	return m
}

// keptItems resolves the entries of keep (KnowledgeID, or a run "r12.K1-K9") against the
// knowledge items of span's prefix memories: the items, in the order keep names them (each
// once), without the revision notes that name a statement of the span's memories, and the
// entries that name none.
func keptItems(span []hippocam.Message, keep []string) (items []hippocam.KnowledgeItem, unknown []string) {
	if len(keep) == 0 {
		return nil, nil
	}
	byRef := map[string][]hippocam.KnowledgeItem{}
	folded := map[string]bool{} // the statements of the span's memories, which the fold replaces
	for _, m := range span {
		if m.Kind == hippocam.KindPrefixMemory && m.Ref != "" {
			byRef[m.Ref] = m.Knowledge
		}
		for _, k := range m.Knowledge {
			folded[strings.TrimSpace(k.Fact)] = true
		}
	}
	seen := map[string]bool{}
	for _, entry := range keep {
		entry = strings.Trim(strings.TrimSpace(entry), "[]")
		match := keepPattern.FindStringSubmatch(entry)
		if match == nil {
			unknown = append(unknown, entry)
			continue
		}
		known, ok := byRef[match[1]]
		from, _ := strconv.Atoi(match[2])
		to := from
		if match[3] != "" {
			to, _ = strconv.Atoi(match[3])
		}
		if !ok || from < 1 || to < from || to > len(known) {
			unknown = append(unknown, entry)
			continue
		}
		for n := from; n <= to; n++ {
			id := KnowledgeID(match[1], n-1)
			if seen[id] {
				continue
			}
			seen[id] = true
			// A note of what the item replaced goes when that statement is folded in with it:
			// nothing in view states it any more.
			k := known[n-1]
			k.Revises = nil
			for _, r := range known[n-1].Revises {
				if !folded[strings.TrimSpace(r)] {
					k.Revises = append(k.Revises, r)
				}
			}
			items = append(items, k)
		}
	}
	return items, unknown
}

// PalimPrompt returns PALIM's role prompt, for tools that want the same summarizer text (the
// flat-summary baseline of the benchmarks).
func PalimPrompt() string { return palimPrompt }
