package engine

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
)

// PALIM (seed 000 §2.4, appendix B.2.3) consolidates a prefix into a narrative and knowledge
// items, recursively: earlier memories in the prefix are consolidated again with the rest.

//go:embed prompts/palim.txt
var palimPrompt string

const palimInstruction = "Consolidate those messages into memory: a narrative of what I did and came to, and the knowledge worth keeping, one fact per item with its evaluation."

// palim asks PALIM for the memory of span (size tokens) and renders it as a prefix memory with a
// fresh ref. While the memory saves less than Δmin it asks for a more concise version, up to J
// times, and returns the last version (fold decides whether it is good enough).
func (st *step) palim(ctx context.Context, lo, hi, size, level int) (hippocam.Message, error) {
	instruction := SpanLine(st.s.Context, lo, hi) + "\n" + palimInstruction
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
		memory = st.prefixMemory(&out, level)
		saving := size - memory.Tokens
		if saving >= st.e.cfg.MinSaving {
			return memory, nil
		}
		instruction = fmt.Sprintf("%s\n%s\n\n%s: the memory must be at least %d tokens shorter than the %d tokens it replaces, and yours saves %d. Shorten the narrative first; keep every knowledge item's particulars.",
			SpanLine(st.s.Context, lo, hi), palimInstruction, ConciseMarker, st.e.cfg.MinSaving, size, saving)
	}
	return memory, nil
}

// RevisesMarker begins the line under a knowledge item that names the earlier statement it
// replaces.
const RevisesMarker = "(this replaces the earlier statement"

// RevisesLine is the line that says the line above it replaces an earlier statement.
func RevisesLine(earlier string) string {
	return RevisesMarker + " «" + earlier + "»; the line above is current)"
}

// FitMarker begins the line of a PALIM request that names the size its memory must fit.
const FitMarker = "Fit the whole memory within"

// palimFit asks PALIM for the memory of span [lo, hi) within target tokens, the request that
// lets unused knowledge recede (recede). The memory it returns may still be too large: the caller
// checks.
func (st *step) palimFit(ctx context.Context, lo, hi, target, level int) (hippocam.Message, error) {
	header := st.prefixMemory(&PalimOutput{}, level).Tokens
	room := max(target-header, 16)
	instruction := fmt.Sprintf("%s\n%s\n\n%s %d tokens. Keep the narrative to a line or leave it out. Keep as knowledge what was stated or used most recently; for what was brought forward least recently, keep only a short note of what it was about and where it sits in the archive (the ref of the memory beneath which it lies), without its particulars; if even such notes do not fit, leave out the oldest and end with a note that more is in the archive.",
		SpanLine(st.s.Context, lo, hi), palimInstruction, FitMarker, room)
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
	return st.prefixMemory(&out, level), nil
}

// prefixMemory renders PALIM's output as the message that replaces the prefix.
func (st *step) prefixMemory(out *PalimOutput, level int) hippocam.Message {
	ref := st.s.NextID("r")
	var b strings.Builder
	fmt.Fprintf(&b, "%s Consolidated memory of my earlier work %s%d) (recall the ref for the messages beneath it).\n", hippocam.RefTag(ref), levelMark, level)
	if n := strings.TrimSpace(out.Narrative); n != "" {
		b.WriteString("Narrative:\n")
		b.WriteString(n)
		b.WriteString("\n")
	}
	if len(out.Knowledge) > 0 {
		b.WriteString("Knowledge:\n")
		for _, k := range out.Knowledge {
			fmt.Fprintf(&b, "- [%s] %s\n", k.Evaluation, strings.TrimSpace(k.Fact))
			if r := strings.TrimSpace(k.Revises); r != "" {
				b.WriteString("  " + RevisesLine(r) + "\n")
			}
		}
	}
	m := hippocam.Message{
		Role:      hippocam.RoleUser,
		Kind:      hippocam.KindPrefixMemory,
		Ref:       ref,
		Content:   strings.TrimRight(b.String(), "\n"),
		Knowledge: append([]hippocam.KnowledgeItem(nil), out.Knowledge...),
	}
	m.Tokens = hippocam.MessageTokens(st.e.tok, &m)
	return m
}

// PalimPrompt returns PALIM's role prompt, for tools that want the same summarizer text (the
// flat-summary baseline of the benchmarks).
func PalimPrompt() string { return palimPrompt }
