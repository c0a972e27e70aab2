package engine

import (
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
)

// Check reads answer, a component's text as the model returned it, the way the engine reads the
// answers of role: the JSON object in it (hippocam.JSONObject), decoded strictly against the
// role's contract, then the role's validators. context is what the request showed, Hippocam's
// role prompt and instruction left out; for PALIM and PRECIP the span they consolidate is
// context[lo:] (it always ends the request), for JANUS lo is ignored and stack is the intent
// stack it judged. The instruction the validators read is rebuilt as the engine writes it (for
// PRECIP, closing the innermost intent of stack). Check returns the reasons the engine would
// reject the answer for, none when it would accept it. PRECIP's bound on the memory's length,
// which needs a tokenizer, is not checked.
func Check(role hippocam.CallRole, context []hippocam.Message, lo int, stack hippocam.IntentStack, answer string) []string {
	args, ok := hippocam.JSONObject(answer)
	if !ok {
		return []string{"the answer holds no JSON object"}
	}
	if role != hippocam.CallJanus && (lo < 0 || lo >= len(context)) {
		return []string{fmt.Sprintf("the span starts at message %d, outside the %d messages shown", lo, len(context))}
	}
	switch role {
	case hippocam.CallJanus:
		var out JanusOutput
		if err := decodeArgs(args, &out); err != nil {
			return []string{err.Error()}
		}
		if _, _, err := CheckJanus(stack, out.Ops(), "m0", DefaultMaxDepth); err != nil {
			return []string{err.Error()}
		}
		return nil
	case hippocam.CallPalim:
		var out PalimOutput
		if err := decodeArgs(args, &out); err != nil {
			return []string{err.Error()}
		}
		context = restoreMemories(context)
		return out.problems(context, lo, SpanLine(context, lo, len(context))+"\n"+palimInstruction)
	case hippocam.CallPrecip:
		var out PrecipOutput
		if err := decodeArgs(args, &out); err != nil {
			return []string{err.Error()}
		}
		return out.problems(context, lo, precipCheckInstruction(context, lo, stack))
	}
	return []string{fmt.Sprintf("unknown role %q; use janus, palim or precip", role)}
}

// precipCheckInstruction is PRECIP's instruction for the span context[lo:] when the innermost
// intent of stack closes.
func precipCheckInstruction(context []hippocam.Message, lo int, stack hippocam.IntentStack) string {
	chain := make([]string, len(stack))
	for i, in := range stack {
		chain[i] = in.Label
	}
	var b strings.Builder
	b.WriteString(SpanLine(context, lo, len(context)) + "\n")
	b.WriteString(ChainPrefix + strings.Join(chain, ChainSeparator) + "\n")
	if n := len(stack); n > 0 {
		b.WriteString(ClosingPrefix + stack[n-1].Label + "\n")
		fmt.Fprintf(&b, "Exit condition of %q: %s\n", stack[n-1].Label, stack[n-1].Done)
	}
	return b.String()
}

// restoreMemories gives back to the prefix memories of a recorded context what their text
// shows but the chat format drops: their kind, ref and labelled knowledge items (K1 [good] …),
// which a fold's keep entries name. Other messages are left as they are; context is not changed.
func restoreMemories(context []hippocam.Message) []hippocam.Message {
	var out []hippocam.Message
	for i := range context {
		m := context[i]
		if ref, ok := memoryRef(m.Content); ok && m.Role == hippocam.RoleUser && len(m.Knowledge) == 0 {
			m.Kind, m.Ref, m.Knowledge = hippocam.KindPrefixMemory, ref, knowledgeLines(m.Content)
			if out == nil {
				out = append([]hippocam.Message(nil), context...)
			}
			out[i] = m
		}
	}
	if out == nil {
		return context
	}
	return out
}

// memoryRef reads the ref of a prefix memory's text, which begins with memoryHead.
func memoryRef(text string) (string, bool) {
	refs := hippocam.ParseRefTags(firstLine(text))
	if len(refs) == 0 {
		return "", false
	}
	head := memoryHead(refs[0], 0)
	head = head[:strings.Index(head, levelMark)]
	if !strings.HasPrefix(text, head) {
		return "", false
	}
	return refs[0], true
}

// knowledgeLines reads the labelled items of a prefix memory's Knowledge section.
func knowledgeLines(text string) []hippocam.KnowledgeItem {
	var items []hippocam.KnowledgeItem
	_, section, ok := strings.Cut(text, "\nKnowledge:\n")
	if !ok {
		return nil
	}
	for _, l := range strings.Split(section, "\n") {
		_, rest, ok := CutKnowledgeID(strings.TrimSpace(l))
		if !ok {
			continue
		}
		eval, fact, _ := strings.Cut(strings.TrimPrefix(rest, "["), "] ")
		items = append(items, hippocam.KnowledgeItem{Fact: fact, Evaluation: hippocam.Evaluation(eval)})
	}
	return items
}

// firstLine is text up to its first line break.
func firstLine(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	return line
}
