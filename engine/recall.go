package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hippocam/hippocam"
)

// RECALL (Alg. 1) returns one layer of the message tree: the messages directly beneath a
// consolidated message's ref. A result is sized to the room left in the window: children that do
// not fit come back as handles ([ref:ID] of the message) that recall accepts, and a single message
// larger than the room comes back in pages (handle ID@OFFSET for the rest). Unknown refs, or refs
// of another session, are a tool error for the model; nothing changes.

// recallTarget is what a recall call asks for: a layer (the children of ref from child index
// from on) or one message from a byte offset; or a problem to report to the model instead.
type recallTarget struct {
	ref     string
	kids    []hippocam.Message
	from    int
	msg     *hippocam.Message
	offset  int
	problem string
}

// resolve reads a recall call's arguments and finds what they name. Handles: "r7" (a memory's
// layer), "r7#40" (the rest of a layer's list, from its 41st child), "m12" (one message) and
// "m12@4096" (a message from byte 4096 on). Anything else is a problem for the model to read;
// nothing changes.
func (st *step) resolve(ctx context.Context, args string) recallTarget {
	var a RecallArgs
	if err := decodeArgs(args, &a); err != nil {
		return recallTarget{problem: "Recall error: " + err.Error() + `. Call recall with {"ref": "ID"}.`}
	}
	ref := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(a.Ref), "[ref:"), "]")
	if ref == "" {
		return recallTarget{problem: `Recall error: the ref is empty. Call recall with {"ref": "ID"} using an ID from a [ref:ID] tag.`}
	}
	unknown := recallTarget{problem: fmt.Sprintf("Recall error: nothing in this conversation's memory has the ref %q. Use a ref from a [ref:ID] tag in view.", ref)}
	id, sep, num := ref, byte(0), 0
	if i := strings.LastIndexAny(ref, "#@"); i > 0 {
		n, err := strconv.Atoi(ref[i+1:])
		if err != nil || n < 0 {
			return unknown
		}
		id, sep, num = ref[:i], ref[i], n
	}
	if sep != '@' {
		kids, err := st.children(ctx, id)
		if err == nil {
			if num > len(kids) {
				return unknown
			}
			return recallTarget{ref: id, kids: kids, from: num}
		}
		if hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
			return recallTarget{problem: "Recall error: the archive cannot be read right now; answer with what you have."}
		}
		if sep == '#' {
			return unknown
		}
	}
	m, err := st.message(ctx, id)
	if err != nil || num > len(body(m)) {
		return unknown
	}
	return recallTarget{msg: m, offset: num}
}

// render writes the result for a resolved target within room tokens, and its listing for when
// a deeper layer is opened later ("" for problems). ok is false when the room does not hold even
// the smallest page (the text is then the error for the model).
func (st *step) render(t recallTarget, room int) (text, listing string, ok bool) {
	switch {
	case t.problem != "":
		return t.problem, "", true
	case t.msg != nil:
		return st.page(t.msg, t.offset, room)
	default:
		return st.layer(t.ref, t.kids, t.from, room)
	}
}

// maxListing is the most children a shortened layer result still lists one by one.
const maxListing = 8

// block is one child of a recall result: its header line and, when shown, its text.
type block struct {
	head, body string
	handle     string
	tokens     int // of head+body
	leftTokens int // of the left-out line
}

func describe(i, n int, m *hippocam.Message) string {
	s := fmt.Sprintf("%s%d/%d · %s · %s", ChildMarker, i+1, n, m.Role, m.Kind)
	if m.ToolCallID != "" {
		s += " · result of " + m.ToolCallID
	}
	return s
}

func body(m *hippocam.Message) string {
	text := m.Content
	for _, c := range m.ToolCalls {
		text += fmt.Sprintf("\n[calls %s %s (id %s)]", c.Name, c.Arguments, c.ID)
	}
	return text
}

// layer renders the children of ref from index from on, within room tokens: every child as a
// header line with its handle when left out, and, in order, the full text of every child that
// still fits. If even the header lines do not fit, as many as fit are listed and one handle
// (ref#next) leads to the rest of the list.
func (st *step) layer(ref string, kids []hippocam.Message, from, room int) (string, string, bool) {
	tok := st.e.tok
	head := fmt.Sprintf("Recall of %s: the %d messages beneath it, oldest first.", ref, len(kids))
	if from > 0 {
		head = fmt.Sprintf("Recall of %s, continued: messages %d to %d of the %d beneath it.", ref, from+1, len(kids), len(kids))
	}
	used := tok.Count(head) + 1
	// rest is the line whose handle (ref#k) lists the children from index k on.
	rest := func(k int) string {
		return fmt.Sprintf("%s%s %s: the list of messages %d to %d (recall it to list them)", ChildMarker, hippocam.RefTag(fmt.Sprintf("%s#%d", ref, k)), LeftOutMarker, k+1, len(kids))
	}
	var blocks []block
	for i := from; i < len(kids); i++ {
		k := &kids[i]
		b := block{head: describe(i, len(kids), k), body: body(k)}
		b.handle = fmt.Sprintf("%s · %s %s (%d tokens); recall the handle to read it", b.head, hippocam.RefTag(k.ID), LeftOutMarker, k.Tokens)
		b.tokens = tok.Count(b.head) + tok.Count(b.body) + 2
		b.leftTokens = tok.Count(b.handle) + 1
		need := b.leftTokens // child i's line, and the handle to the children after it if any
		if i+1 < len(kids) {
			need += tok.Count(rest(i+1)) + 1
		}
		if used+need > room {
			if len(blocks) == 0 {
				return fmt.Sprintf("Recall error: the window has room for only %d more tokens, too few to list the messages beneath %s. Answer with what you have.", max(room, 0), ref), "", false
			}
			// The list goes on from child i itself, whose line did not fit: the room the line
			// before kept for this handle holds it.
			more := rest(i)
			blocks = append(blocks, block{handle: more, leftTokens: tok.Count(more) + 1})
			used += tok.Count(more) + 1
			break
		}
		used += b.leftTokens
		blocks = append(blocks, b)
	}
	shown := make([]bool, len(blocks))
	for i := range blocks {
		if blocks[i].head == "" {
			continue // the continuation handle
		}
		if extra := blocks[i].tokens - blocks[i].leftTokens; used+extra <= room {
			shown[i] = true
			used += extra
		}
	}
	for {
		text := renderLayer(head, blocks, shown)
		if tok.Count(text) <= room || !anyShown(shown) {
			return text, layerListing(ref, from, head, kids[from:], blocks, shown), true
		}
		for i := len(shown) - 1; i >= 0; i-- { // counting by parts was optimistic: drop the last one shown
			if shown[i] {
				shown[i] = false
				break
			}
		}
	}
}

// layerListing is the short form of a layer result once a deeper layer is opened: every child's
// header with its handle; children that were left out keep their left-out line.
func layerListing(ref string, from int, head string, kids []hippocam.Message, blocks []block, shown []bool) string {
	if len(blocks) > maxListing {
		// A long list would keep most of its room: it shrinks to one handle that lists it again,
		// and the handle to the rest of the list if there is one.
		last := blocks[len(blocks)-1]
		listed := len(blocks)
		if last.head == "" {
			listed--
		}
		s := fmt.Sprintf("%s (Shortened since.)\n%s%s %s: messages %d to %d, listed before (recall it to list them again)",
			head, ChildMarker, hippocam.RefTag(fmt.Sprintf("%s#%d", ref, from)), LeftOutMarker, from+1, from+listed)
		if last.head == "" {
			s += "\n" + last.handle
		}
		return s
	}
	var b strings.Builder
	b.WriteString(head + " (Shortened since: recall a handle to reread a message.)")
	for i := range blocks {
		b.WriteString("\n")
		if shown[i] {
			b.WriteString(blocks[i].head + " · " + hippocam.RefTag(kids[i].ID) + " (shown before)")
		} else {
			b.WriteString(blocks[i].handle)
		}
	}
	return b.String()
}

func renderLayer(head string, blocks []block, shown []bool) string {
	var b strings.Builder
	b.WriteString(head)
	for i := range blocks {
		b.WriteString("\n")
		if shown[i] {
			b.WriteString(blocks[i].head + "\n" + blocks[i].body)
		} else {
			b.WriteString(blocks[i].handle)
		}
	}
	return b.String()
}

func anyShown(shown []bool) bool {
	for _, s := range shown {
		if s {
			return true
		}
	}
	return false
}

// page renders message m from byte offset on, as much as fits in room, with a handle for the
// rest. A page boundary never splits a UTF-8 character.
func (st *step) page(m *hippocam.Message, offset, room int) (string, string, bool) {
	tok := st.e.tok
	text := body(m)
	if offset > len(text) {
		offset = len(text)
	}
	rest := text[offset:]
	head := fmt.Sprintf("%s1/1 · %s · %s", ChildMarker, m.Role, m.Kind)
	if offset > 0 {
		head += fmt.Sprintf(" · continued from byte %d of %d", offset, len(text))
		if m.Consolidated() {
			// The memory's own tag sits on its first page; repeat it, so that what this page
			// says can be followed to the originals.
			head += " · memory " + hippocam.RefTag(m.Ref)
		}
	}
	if tok.Count(head)+tok.Count(rest)+2 <= room {
		return head + "\n" + rest, fmt.Sprintf("%s · %s (shown before; recall it to reread it)", head, hippocam.RefTag(m.ID)), true
	}
	tail := func(next int) string {
		return fmt.Sprintf("%s%s %s: the rest of this message (%d of %d bytes); recall the handle to read on", ChildMarker, hippocam.RefTag(fmt.Sprintf("%s@%d", m.ID, next)), LeftOutMarker, len(text)-next, len(text))
	}
	budget := room - tok.Count(head) - tok.Count(tail(len(text))) - 4
	if budget < 16 {
		return fmt.Sprintf("Recall error: the window has room for only %d more tokens, too few to show any of message %s. Answer with what you have.", max(room, 0), m.ID), "", false
	}
	// The longest prefix of rest within budget tokens, by binary search over byte lengths.
	lo, hi := 0, len(rest)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if tok.Count(rest[:mid]) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	for lo > 0 && lo < len(rest) && !utf8.RuneStart(rest[lo]) {
		lo--
	}
	if nl := strings.LastIndexByte(rest[:lo], '\n'); nl > lo*4/5 {
		lo = nl + 1 // prefer to break at a line end when one is near
	}
	if lo == 0 {
		_, size := utf8.DecodeRuneInString(rest)
		lo = size
	}
	next := offset + lo
	listing := fmt.Sprintf("%sbytes %d-%d of %s shown before · %s %s: the rest", ChildMarker, offset, next, m.ID, hippocam.RefTag(fmt.Sprintf("%s@%d", m.ID, next)), LeftOutMarker)
	return head + "\n" + rest[:lo] + "\n" + tail(next), listing, true
}
