package bench

import (
	"fmt"

	"github.com/hippocam/hippocam"
)

// saltFactStream keeps the fact stream's random choices apart from the other workloads'.
const saltFactStream = 0xf4c75e1a

// chunkTokens is the usual size of one chunk of a fact stream.
const chunkTokens = 900

// FactStream generates a stream of about tokens content tokens (counted with tok) in the
// conflict-resolution protocol of MemoryAgentBench: records arrive in chunks, user messages of
// about 900 tokens that hold a dozen `KEY := VALUE` lines among sentences of filler prose. The
// stream is about a fixed population of streamRecords keys: a fifth of them are `detail` facts
// (which consolidation leaves in the archive), a fifth are facts that never change, the rest are
// revised by later chunks (the latest value is the right answer, the earlier ones are stale).
// Until the population is complete a chunk mixes new records and revisions; after that it only
// revises, so a longer stream means more revisions, not more keys. No intent is opened: the
// stream is plain input. The questions come only after the whole stream has been read: revised
// keys, early facts that never changed, details from all along the population, and one key
// nothing named. The same seed, size and tokenizer give the same workload.
func FactStream(seed int64, tokens int, tok hippocam.Tokenizer) *Workload {
	s := newScript(seed, saltFactStream, tok)
	budget := tokens - 150 // the last message and the questions
	s.user("Records follow in numbered chunks. A later record about a key replaces the earlier one.",
		"Read every chunk; the questions come after the last one.")
	ids := map[string]int{}
	for k := 1; s.tokens < budget; k++ {
		s.chunk(k, budget, ids)
	}
	s.user("That was the last chunk.")
	s.streamQuestions()
	return s.workload(NameFactStream, tokens)
}

// streamRecords is the number of keys a fact stream is about. Every fact lives on in a
// consolidated memory (docs/sim.md), so the population must fit a small window with room to spare:
// 120 records are about 1,500 tokens.
const streamRecords = 120

// streamEntities are the things records are about, with their attributes.
var streamEntities = []struct {
	name  string
	attrs []string
}{
	{"vessel", []string{"captain", "berth", "cargo", "eta"}},
	{"depot", []string{"manager", "stock", "gate", "shift"}},
	{"lab", []string{"lead", "room", "sample", "grant"}},
	{"bridge", []string{"inspector", "load_limit", "status", "span"}},
	{"school", []string{"principal", "pupils", "bus_route", "term"}},
}

// chunk writes one chunk: new records, revisions of earlier ones and details, among prose.
func (s *script) chunk(k, budget int, ids map[string]int) {
	size := s.budgetFor(chunkTokens-150+s.rng.IntN(300), budget)
	n := max(2, size/70)
	revisable := s.revisable("")
	var facts []string
	for range n {
		if len(s.order) >= streamRecords || (s.rng.IntN(10) < 4 && len(revisable) > 0) {
			key := pick(s.rng, revisable)
			facts = append(facts, s.set(key, s.fresh(key, s.recordValue)))
			continue
		}
		key := s.newStreamKey(ids)
		switch len(s.order) % 5 {
		case 0:
			facts = append(facts, s.setDetail(key, s.recordValue()))
		case 1:
			s.frozen[key] = true
			facts = append(facts, s.set(key, s.recordValue()))
		default:
			facts = append(facts, s.set(key, s.recordValue()))
		}
	}
	filler := s.prose(size - 12*n)
	s.user(append([]string{fmt.Sprintf("Chunk %d.", k)}, s.mix(facts, filler)...)...)
}

// newStreamKey names a record never written before: an entity, its number and an attribute.
func (s *script) newStreamKey(ids map[string]int) string {
	e := pick(s.rng, streamEntities)
	for {
		ids[e.name]++
		key := fmt.Sprintf("%s%d_%s", e.name, ids[e.name]/len(e.attrs)+1, e.attrs[ids[e.name]%len(e.attrs)])
		if s.facts[key] == nil {
			return key
		}
	}
}

// recordValue is the value of one record: a word and a number.
func (s *script) recordValue() string {
	words := []string{"amber", "birch", "cobalt", "delta", "ember", "fjord", "granite", "harbor", "indigo", "juniper", "kestrel", "lumen"}
	return fmt.Sprintf("%s-%d", pick(s.rng, words), s.rng.IntN(9000)+1000)
}

// streamQuestions asks, in a random order: six revised keys, four of the eight earliest facts
// that never changed, four details (one from each quarter of the population), and one key never
// named.
func (s *script) streamQuestions() {
	taken := map[string]bool{}
	var keys []string
	keys = append(keys, s.pickKeys(s.keys(func(f *fact) bool { return len(f.values) > 1 }), 6, taken)...)
	frozen := s.keys(func(f *fact) bool { return s.frozen[f.key] })
	keys = append(keys, s.pickKeys(frozen[:min(8, len(frozen))], 4, taken)...)
	for _, part := range quarters(s.keys(func(f *fact) bool { return f.detail })) {
		keys = append(keys, s.pickKeys(part, 1, taken)...)
	}
	keys = append(keys, s.unknownKey("harbor1_pilot"))
	s.askAll(keys)
}

// quarters cuts keys into four parts of about the same length.
func quarters(keys []string) [4][]string {
	n := len(keys)
	return [4][]string{keys[:n/4], keys[n/4 : n/2], keys[n/2 : 3*n/4], keys[3*n/4:]}
}
