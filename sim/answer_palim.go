package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// palim consolidates a prefix. The narrative has one line per undertaking: the undertaking lines
// of the intent memories and earlier prefix memories in it, and one line for each run of other
// messages. The knowledge holds every fact of the prefix, merged so that the latest value of a
// key wins, and one impression per key for the details and impressions in it, in the order their
// keys first appear, all neutral. An item read unchanged from a prefix memory of the span (by
// its label, engine.ItemLabel, with no revision note) is kept by reference (engine.KnowledgeID,
// runs as "r12.K1-K9") rather than written again. Asked for a more concise version, or when the
// memory has more words than the request's size line allows (engine.SizeMarker), it drops the
// narrative, unless the knowledge is empty and the answer would say nothing at all.
//
// Asked to fit a named size in words (engine.FitMarker), it drops the narrative, then turns
// facts into impressions, those whose latest statement in the span is earliest first, until the
// knowledge fits; if the impressions alone do not fit, it drops them, earliest first, and ends
// with one item saying that more is in the archive.
func palim(r *request) (answer, error) {
	lo, hi, instruction, err := r.frame(hippocam.CallPalim)
	if err != nil {
		return answer{}, err
	}
	var narrative []string
	var items []hippocam.KnowledgeItem
	at := map[string]int{}   // item key ("fact KEY" or "impression KEY") -> index in items
	last := map[string]int{} // item key -> the message that stated it last
	// from is the knowledge id of the memory line an item was last read from, "" when a
	// message that is no prefix memory stated it last.
	from := map[string]string{}
	run := 0
	var walk adviceWalk // advice lines stay; feedback becomes advice (learn_agent.go)
	flush := func() {
		if run > 0 {
			narrative = append(narrative, runLine(run))
			run = 0
		}
	}
	for i := lo; i < hi; i++ {
		if r.recallResult[i] || r.recallCall[i] {
			continue
		}
		own := false
		ref := r.memoryRef(i)
		idOf := func(l *line) string { // the item's KnowledgeID, "" unless a memory's own item
			if ref == "" || l.id == "" {
				return ""
			}
			return ref + "." + l.id
		}
		for _, l := range r.lines(i) {
			if strings.HasPrefix(l.body, undertakingDone) || strings.HasPrefix(l.body, undertakingRun) {
				if !own {
					flush()
				}
				own = true
				narrative = append(narrative, l.body)
			}
			if a, ok := walk.see(&l, true); ok {
				items = keepLater(items, at, a)
				last[adviceID(&a)] = i
				from[adviceID(&a)] = idOf(&l)
				continue
			}
			var id, fact string
			switch l.kind {
			case kindFact:
				id, fact = "fact "+l.key, factText(l.key, l.value)
			case kindDetail, kindImpression:
				id, fact = "impression "+l.key, impressionText(l.key)
			default:
				continue
			}
			last[id] = i
			from[id] = idOf(&l)
			if j, ok := at[id]; ok {
				items[j].Fact = fact
				continue
			}
			at[id] = len(items)
			items = append(items, hippocam.KnowledgeItem{Fact: fact, Evaluation: hippocam.EvalNeutral})
		}
		if !own {
			run++
		}
	}
	flush()
	items = withoutReplaced(items)
	// Revisions win visibly: a fact whose key an earlier memory in view states otherwise says
	// which statement it replaces.
	earlier := r.memoryFacts(lo)
	for j := range items {
		if k, v, ok := strings.Cut(items[j].Fact, " := "); ok {
			if old, seen := earlier[k]; seen && old != v {
				items[j].Revises = hippocam.Revisions{factText(k, old)}
			}
		}
	}
	out := engine.PalimOutput{Narrative: strings.Join(narrative, "\n"), Knowledge: items}
	if out.Knowledge == nil {
		out.Knowledge = []hippocam.KnowledgeItem{}
	}
	if words, ok := numberAfter(instruction, engine.FitMarker); ok {
		out.Narrative = ""
		out.Knowledge = fit(out.Knowledge, last, words)
		return contractAnswer(r, engine.PalimTool, out)
	}
	limit, limited := numberAfter(instruction, engine.SizeMarker)
	if len(items) > 0 && (strings.Contains(instruction, engine.ConciseMarker) || limited && memoryWords(out) > limit) {
		out.Narrative = ""
	}
	// An item read unchanged from a memory of the span is kept by its id, not written again.
	byID := r.knowledgeIDs(lo, hi)
	var own []hippocam.KnowledgeItem
	for _, it := range out.Knowledge {
		id := from[itemKey(it)]
		if was, ok := byID[id]; ok && id != "" && len(it.Revises) == 0 && was == it.Fact {
			out.Keep = append(out.Keep, id)
			continue
		}
		own = append(own, it)
	}
	out.Knowledge = append([]hippocam.KnowledgeItem{}, own...)
	out.Keep = keepRuns(out.Keep)
	return contractAnswer(r, engine.PalimTool, out)
}

// itemKey is the key under which palim tracks an item ("fact KEY", "impression KEY", or the
// advice's id).
func itemKey(it hippocam.KnowledgeItem) string {
	l := readLine(it.Fact)
	switch l.kind {
	case kindFact:
		return "fact " + l.key
	case kindDetail, kindImpression:
		return "impression " + l.key
	case kindAdvice:
		return adviceID(l.adv)
	}
	return ""
}

// memoryRef is the ref of message i when it is a memory (its first [ref:…] tag), else "".
func (r *request) memoryRef(i int) string {
	if !r.memory[i] {
		return ""
	}
	if refs := hippocam.ParseRefTags(r.msgs[i].Content); len(refs) > 0 {
		return refs[0]
	}
	return ""
}

// knowledgeIDs maps the items of the memories among messages [lo, hi) that carry no note of
// what they replaced to their text, by KnowledgeID.
func (r *request) knowledgeIDs(lo, hi int) map[string]string {
	ids := map[string]string{}
	for i := lo; i < hi; i++ {
		ref := r.memoryRef(i)
		if ref == "" {
			continue
		}
		ls := r.lines(i)
		for j, l := range ls {
			// An item with a note of what it replaced is written again: the note goes stale
			// once the statement it names is folded in with it.
			if l.id != "" && (j+1 == len(ls) || !strings.Contains(ls[j+1].raw, engine.RevisesMarker)) {
				ids[ref+"."+l.id] = l.body
			}
		}
	}
	return ids
}

// keepRuns writes kept ids as runs where they follow one another in one memory: r12.K1,
// r12.K2, r12.K3 become r12.K1-K3.
func keepRuns(ids []string) []string {
	var out []string
	for i := 0; i < len(ids); {
		ref, n, ok := splitID(ids[i])
		j := i + 1
		for ok && j < len(ids) {
			r2, n2, ok2 := splitID(ids[j])
			if !ok2 || r2 != ref || n2 != n+(j-i) {
				break
			}
			j++
		}
		if j-i > 1 {
			out = append(out, fmt.Sprintf("%s.K%d-K%d", ref, n, n+(j-i)-1))
		} else {
			out = append(out, ids[i])
		}
		i = j
	}
	return out
}

// splitID splits "r12.K3" into "r12" and 3.
func splitID(id string) (string, int, bool) {
	ref, label, ok := strings.Cut(id, ".K")
	n, err := strconv.Atoi(label)
	return ref, n, ok && err == nil
}

// memoryWords counts the words of a memory as its request measures them: the narrative's and
// each item's, with one for its evaluation.
func memoryWords(out engine.PalimOutput) int {
	n := len(strings.Fields(out.Narrative))
	for _, it := range out.Knowledge {
		n += len(strings.Fields(it.Fact)) + 1
	}
	return n
}

// moreInArchive is the item that ends knowledge cut down to a size.
const moreInArchive = "more in the archive"

// fit cuts knowledge items to size words (counted as memoryWords counts them): facts become
// impressions, least recently stated first; then impressions go, least recently stated first,
// and the last item says that more is in the archive.
func fit(items []hippocam.KnowledgeItem, last map[string]int, size int) []hippocam.KnowledgeItem {
	cost := func(its []hippocam.KnowledgeItem) int {
		return memoryWords(engine.PalimOutput{Knowledge: its})
	}
	keyOf := func(it hippocam.KnowledgeItem) (string, bool) {
		if k, _, ok := strings.Cut(it.Fact, " := "); ok {
			return k, true
		}
		return strings.TrimSuffix(strings.TrimPrefix(it.Fact, "detail "), engine.ImpressionSuffix), false
	}
	when := func(it hippocam.KnowledgeItem) int {
		if l := readLine(it.Fact); l.kind == kindAdvice {
			return last[adviceID(l.adv)]
		}
		k, fact := keyOf(it)
		if fact {
			return last["fact "+k]
		}
		return last["impression "+k]
	}
	for cost(items) > size {
		oldest := -1
		for i, it := range items {
			if _, fact := keyOf(it); fact && (oldest < 0 || when(it) < when(items[oldest])) {
				oldest = i
			}
		}
		if oldest < 0 {
			break
		}
		k, _ := keyOf(items[oldest])
		imp := "impression " + k
		items = append(items[:oldest:oldest], items[oldest+1:]...)
		if _, ok := last[imp]; !ok || last[imp] < last["fact "+k] {
			last[imp] = last["fact "+k]
		}
		dup := false
		for _, it := range items {
			if it.Fact == impressionText(k) {
				dup = true
			}
		}
		if !dup {
			items = append(items, hippocam.KnowledgeItem{Fact: impressionText(k), Evaluation: hippocam.EvalNeutral})
		}
	}
	more := []hippocam.KnowledgeItem{{Fact: moreInArchive, Evaluation: hippocam.EvalNeutral}}
	for len(items) > 0 && cost(append(items, more...)) > size {
		oldest := 0
		for i, it := range items {
			if when(it) < when(items[oldest]) {
				oldest = i
			}
		}
		items = append(items[:oldest:oldest], items[oldest+1:]...)
		if len(items) == 0 || cost(append(items, more...)) <= size {
			items = append(items, more...)
			break
		}
	}
	return items
}

// numberAfter reads the number that follows marker in the instruction (the words a size line
// allows).
func numberAfter(instruction, marker string) (int, bool) {
	i := strings.Index(instruction, marker)
	if i < 0 {
		return 0, false
	}
	var n int
	if _, err := fmt.Sscanf(instruction[i+len(marker):], "%d", &n); err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// runLine is the narrative line for n messages that no memory covers.
func runLine(n int) string {
	if n == 1 {
		return undertakingRun + "1 message outside any finished intent."
	}
	return fmt.Sprintf("%s%d messages outside any finished intent.", undertakingRun, n)
}
