package bench

import (
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
)

// saltInterleaved keeps the interleaved workload's random choices apart from the other
// workloads'.
const saltInterleaved = 0x1e7e4a5d

// interleavedTasks are the tasks a user works on in turns: each has a slug (the prefix of its
// keys), a title, an exit condition and its attributes.
var interleavedTasks = []struct {
	slug, title, cond string
	attrs             []string
}{
	{"trip", "Plan the Lisbon trip", "the itinerary is agreed", []string{"flight", "hotel", "budget", "arrival", "guide", "museum_day"}},
	{"garden", "Redesign the back garden", "the planting plan is final", []string{"soil_ph", "hedge", "pond_depth", "supplier", "bench_wood", "bulbs"}},
	{"tax", "File the household tax return", "the return is submitted", []string{"refund", "advisor", "deadline", "form", "deduction", "reference"}},
	{"move", "Organise the move to the new flat", "everything is moved", []string{"van", "date", "boxes", "movers", "new_address", "deposit"}},
	{"recipe", "Build the cookbook for the reunion", "the cookbook is printed", []string{"main", "dessert", "printer", "pages", "cover", "guests"}},
}

// Interleaved generates about tokens content tokens (counted with tok) of a user working on five
// tasks in turns, the GoodAI LTM interleaving idea: each visit to a task is an intent of its own,
// a few messages and sometimes a tool call that state, revise or detail the task's facts; between
// visits come filler messages (small talk, and lookups whose long results say nothing about the
// tasks). A task states at most taskKeys keys and then only revises them. At the end come
// questions about every task (the latest value of a revised fact, a detail, its first fact, which
// never changes) and one key nothing named. The same seed, size and tokenizer give the same
// workload.
func Interleaved(seed int64, tokens int, tok hippocam.Tokenizer) *Workload {
	s := newScript(seed, saltInterleaved, tok)
	budget := tokens - 150 // the questions
	visits := make([]int, len(interleavedTasks))
	for s.tokens < budget {
		t := s.rng.IntN(len(interleavedTasks))
		visits[t]++
		s.visit(t, visits[t], budget)
		for n := s.rng.IntN(3) + 1; n > 0 && s.tokens < budget; n-- {
			s.smallTalk(budget)
		}
	}
	s.interleavedQuestions()
	return s.workload(NameInterleaved, tokens)
}

// visit is one turn on task t: an intent holding one to three messages of facts and sometimes a
// lookup.
func (s *script) visit(t, n, budget int) {
	task := interleavedTasks[t]
	label := fmt.Sprintf("%s, visit %d", task.title, n)
	open := "#open " + label + " | " + task.cond + " or the user moves on"
	for i, msgs := 0, s.rng.IntN(3)+1; i < msgs && (i == 0 || s.tokens < budget); i++ {
		facts := s.taskFacts(t, s.rng.IntN(3)+1)
		s.user(append(append([]string{open}, s.mix(facts, s.prose(s.budgetFor(60+s.rng.IntN(200), budget)))...), "!say noted")...)
		open = ""
	}
	if s.rng.IntN(3) == 0 && s.tokens < budget {
		s.user(`!call lookup {"task":"` + task.slug + `"}`)
		s.tool(s.mix(s.taskFacts(t, 2), s.rows(task.slug, s.budgetFor(200+s.rng.IntN(500), budget)))...)
	}
	s.user("#close "+label, "!say back to this later")
}

// taskKeys is the most keys one task states. Every fact lives on in a consolidated memory
// (docs/sim.md), so the five tasks' facts must fit a small window with room to spare; once a task
// has stated taskKeys keys it only revises them.
const taskKeys = 20

// taskFacts writes n facts of task t: a revision of one the task already stated, a new attribute,
// or a detail. An attribute stated again later in the task gets a number ("trip_hotel2"). The
// task's first fact and every fourth one after it never change.
func (s *script) taskFacts(t, n int) []string {
	task := interleavedTasks[t]
	prefix := task.slug + "_"
	mine := s.revisable(prefix)
	stated := len(s.keys(func(f *fact) bool { return strings.HasPrefix(f.key, prefix) }))
	var out []string
	for range n {
		r := s.rng.IntN(20)
		if len(mine) > 0 && (r < 7 || stated >= taskKeys) {
			key := pick(s.rng, mine)
			out = append(out, s.set(key, s.fresh(key, s.recordValue)))
			continue
		}
		attr := pick(s.rng, task.attrs)
		key := prefix + attr
		for i := 2; s.facts[key] != nil; i++ {
			key = fmt.Sprintf("%s%s%d", prefix, attr, i)
		}
		switch {
		case stated%4 == 0:
			s.frozen[key] = true
			out = append(out, s.set(key, s.recordValue()))
		case r < 11:
			out = append(out, s.setDetail(key, s.recordValue()))
		default:
			out = append(out, s.set(key, s.recordValue()))
		}
		stated++
	}
	return out
}

// smallTalk is a filler message: chat, or a lookup whose long result is about nothing the tasks
// need.
func (s *script) smallTalk(budget int) {
	if s.rng.IntN(2) == 0 {
		s.user(s.prose(s.budgetFor(100+s.rng.IntN(300), budget))...)
		return
	}
	s.user(`!call read_news {"topic":"` + pick(s.rng, proseNoun) + `"}`)
	s.tool(s.prose(s.budgetFor(300+s.rng.IntN(600), budget))...)
}

// interleavedQuestions asks, in a random order, about every task: one of its revised facts, one
// of its details and its first fact (which never changed); then one key never named.
func (s *script) interleavedQuestions() {
	taken := map[string]bool{}
	var keys []string
	for _, task := range interleavedTasks {
		mine := func(keep func(f *fact) bool) []string {
			return s.keys(func(f *fact) bool { return strings.HasPrefix(f.key, task.slug+"_") && keep(f) })
		}
		keys = append(keys, s.pickKeys(mine(func(f *fact) bool { return len(f.values) > 1 }), 1, taken)...)
		keys = append(keys, s.pickKeys(mine(func(f *fact) bool { return f.detail }), 1, taken)...)
		if first := mine(func(f *fact) bool { return s.frozen[f.key] }); len(first) > 0 {
			keys = append(keys, s.pickKeys(first[:1], 1, taken)...)
		}
	}
	keys = append(keys, s.unknownKey("trip_visa"))
	s.askAll(keys)
}
