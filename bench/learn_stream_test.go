package bench

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// taskLines is a generated task's user message, read back line by line.
type taskLines struct {
	title   string
	tags    []string
	hasTags bool
	decide  map[string][]string // key → options
	facts   map[string]string   // KEY := VALUE, in order of the message (last wins)
	details map[string]string
	asks    []string
}

var (
	tagRe    = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	decideRe = regexp.MustCompile(`^decide ([A-Za-z0-9_.-]+): (.+)$`)
	factRe   = regexp.MustCompile(`^([A-Za-z0-9_.-]+) := (.+)$`)
	detailRe = regexp.MustCompile(`^detail ([A-Za-z0-9_.-]+) := (.+)$`)
)

func readTask(t *testing.T, task *StreamTask) taskLines {
	t.Helper()
	if len(task.Messages) != 2 || task.Messages[0].Role != "system" || task.Messages[1].Role != "user" {
		t.Fatalf("%s: want a system and a user message, got %+v", task.ID, task.Messages)
	}
	tl := taskLines{decide: map[string][]string{}, facts: map[string]string{}, details: map[string]string{}}
	for _, line := range strings.Split(task.Messages[1].Content, "\n") {
		switch {
		case strings.HasPrefix(line, "tags: "):
			tl.hasTags = true
			tl.tags = strings.Fields(strings.TrimPrefix(line, "tags: "))
			for _, tag := range tl.tags {
				if !tagRe.MatchString(tag) {
					t.Errorf("%s: tag %q breaks the tag syntax", task.ID, tag)
				}
			}
		case strings.HasPrefix(line, "!ask "):
			tl.asks = append(tl.asks, strings.TrimPrefix(line, "!ask "))
		case decideRe.MatchString(line):
			m := decideRe.FindStringSubmatch(line)
			tl.decide[m[1]] = strings.Split(m[2], " | ")
		case detailRe.MatchString(line):
			m := detailRe.FindStringSubmatch(line)
			tl.details[m[1]] = m[2]
		case factRe.MatchString(line):
			m := factRe.FindStringSubmatch(line)
			tl.facts[m[1]] = m[2]
		case tl.title == "":
			if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "!") {
				t.Errorf("%s: the first line %q is a directive, not a title", task.ID, line)
			}
			tl.title = line
		default:
			for _, p := range []string{"use ", "avoid ", "feedback:", "#", "!"} {
				if strings.HasPrefix(line, p) {
					t.Errorf("%s: note line %q reads as %q", task.ID, line, p)
				}
			}
		}
	}
	return tl
}

func hasTag(tl taskLines, tag string) bool { return slices.Contains(tl.tags, tag) }

func TestGenerateStreamIsDeterministic(t *testing.T) {
	a, err := GenerateStream(3, 160)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GenerateStream(3, 160)
	c, _ := GenerateStream(4, 160)
	ja, _ := WriteStream(a)
	jb, _ := WriteStream(b)
	jc, _ := WriteStream(c)
	if !bytes.Equal(ja, jb) {
		t.Error("the same seed gave two streams")
	}
	if bytes.Equal(ja, jc) {
		t.Error("seeds 3 and 4 gave the same stream")
	}
	if _, err := GenerateStream(1, 2*len(LearnFamilies())-1); err == nil {
		t.Error("a stream too small for every family twice was generated")
	}
}

func TestGenerateStreamFormat(t *testing.T) {
	tasks, err := GenerateStream(1, 60)
	if err != nil {
		t.Fatal(err)
	}
	data, err := WriteStream(tasks)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) != 60 {
		t.Fatalf("%d lines for 60 tasks", len(lines))
	}
	ids := map[string]bool{}
	for i, line := range lines {
		var v map[string]json.RawMessage
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		for _, k := range []string{"id", "source", "messages", "env"} {
			if _, ok := v[k]; !ok {
				t.Errorf("line %d has no %q", i+1, k)
			}
		}
		var id string
		json.Unmarshal(v["id"], &id)
		if ids[id] {
			t.Errorf("id %s twice", id)
		}
		ids[id] = true
	}
}

// TestGenerateStreamFamilies checks that every family expresses what it claims to.
func TestGenerateStreamFamilies(t *testing.T) {
	for _, seed := range []int64{1, 2, 7} {
		tasks, err := GenerateStream(seed, 160)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{}
		titles := map[string]map[string]bool{}
		var replicaRules [2]map[string]string // per half: env tag → right value
		replicaSeen := 0
		stated := map[string]string{}
		lastDetail := map[string]string{}
		vendorAsking := false
		for i := range tasks {
			task := &tasks[i]
			tl := readTask(t, task)
			counts[task.Source]++
			if titles[task.Source] == nil {
				titles[task.Source] = map[string]bool{}
			}
			titles[task.Source][tl.title] = true
			for key, d := range task.Env.Decide {
				opts, ok := tl.decide[key]
				if !ok {
					t.Fatalf("%s: env decides %s, the message does not", task.ID, key)
				}
				for _, r := range d.Right {
					if !slices.Contains(opts, r) {
						t.Errorf("%s: right value %s of %s is not an option %v", task.ID, r, key, opts)
					}
				}
				if !slices.Contains(d.Right, d.Reference) {
					t.Errorf("%s: reference %s of %s is not right", task.ID, d.Reference, key)
				}
			}
			if len(tl.decide) != len(task.Env.Decide) || len(tl.asks) != len(task.Env.Ask) {
				t.Errorf("%s: the message and env disagree on the items", task.ID)
			}
			right := func(key string) string { return task.Env.Decide[key].Right[0] }
			switch task.Source {
			case FamilyCarrier:
				if want := carrierFor[tl.tags[1]]; right("carrier") != want || !hasTag(tl, "size-bulk") != (right("insurance") == "no") {
					t.Errorf("%s: %v gives carrier %s insurance %s", task.ID, tl.tags, right("carrier"), right("insurance"))
				}
			case FamilyRetail, FamilyWholesale:
				want := map[string]string{FamilyRetail: "credit", FamilyWholesale: "cash"}[task.Source]
				segment := strings.TrimPrefix(task.Source, "refund-")
				if right("refund") != want || !hasTag(tl, segment) {
					t.Errorf("%s: tags %v, refund %s", task.ID, tl.tags, right("refund"))
				}
			case FamilyTriage:
				if right("priority") != priorityFor[tl.tags[1]] {
					t.Errorf("%s: tags %v, priority %s", task.ID, tl.tags, right("priority"))
				}
			case FamilyEscalate:
				if tl.hasTags || right("priority") != "high" {
					t.Errorf("%s: an escalation has tags %v or priority %s", task.ID, tl.tags, right("priority"))
				}
			case FamilyReplica:
				half := 0
				if replicaSeen >= familyCount(tasks, FamilyReplica)/2 {
					half = 1
				}
				replicaSeen++
				if replicaRules[half] == nil {
					replicaRules[half] = map[string]string{}
				}
				if prev, ok := replicaRules[half][tl.tags[1]]; ok && prev != right("replica") {
					t.Errorf("%s: the rule for %s changed within a half", task.ID, tl.tags[1])
				}
				replicaRules[half][tl.tags[1]] = right("replica")
			case FamilyVendor:
				for k, v := range tl.facts {
					if vendorAsking {
						t.Errorf("%s: a fact is stated after the family started asking", task.ID)
					}
					stated[k] = v
				}
				if len(tl.asks) > 0 {
					vendorAsking = true
				}
				for _, k := range tl.asks {
					if v, ok := stated[k]; !ok || task.Env.Ask[k] != v {
						t.Errorf("%s: asks %s = %q, stated %q", task.ID, k, task.Env.Ask[k], v)
					}
				}
			case FamilyIncident:
				for _, k := range tl.asks {
					if v, ok := lastDetail[k]; !ok || task.Env.Ask[k] != v {
						t.Errorf("%s: asks %s = %q, the previous incident stated %q", task.ID, k, task.Env.Ask[k], v)
					}
				}
				clear(lastDetail)
				for k, v := range tl.details {
					lastDetail[k] = v
				}
				if len(tl.details) != 1 {
					t.Errorf("%s: %d details, want one", task.ID, len(tl.details))
				}
			case FamilyCodename:
				if d := task.Env.Decide["codename"]; len(d.Right) != len(tl.decide["codename"]) {
					t.Errorf("%s: a codename task with wrong values %v", task.ID, d.Right)
				}
			}
		}
		for _, f := range LearnFamilies() {
			if counts[f.Source] < 2 {
				t.Errorf("seed %d: family %s has %d tasks", seed, f.Source, counts[f.Source])
			}
			if f.Source != FamilyTriage && len(titles[f.Source]) != 1 {
				t.Errorf("seed %d: family %s has titles %v, want one", seed, f.Source, titles[f.Source])
			}
		}
		if len(titles[FamilyTriage]) < 2 {
			t.Errorf("seed %d: triage has one title: nothing for a router to over-split", seed)
		}
		if !slices.Equal(mapKeys(titles[FamilyRetail]), mapKeys(titles[FamilyWholesale])) {
			t.Errorf("seed %d: the refund siblings have titles %v and %v", seed, titles[FamilyRetail], titles[FamilyWholesale])
		}
		if !vendorAsking || len(stated) == 0 {
			t.Errorf("seed %d: the vendor family never asked for what it stated", seed)
		}
		if replicaRules[0]["env-prod"] == replicaRules[1]["env-prod"] && replicaRules[0]["env-staging"] == replicaRules[1]["env-staging"] {
			t.Errorf("seed %d: the replica rule never flipped: %v", seed, replicaRules)
		}
	}
}

func familyCount(tasks []StreamTask, f string) int {
	n := 0
	for i := range tasks {
		if tasks[i].Source == f {
			n++
		}
	}
	return n
}

func mapKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestScheduleShares checks that the families get their weights' share of the stream.
func TestScheduleShares(t *testing.T) {
	tasks, err := GenerateStream(5, 200)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range LearnFamilies() {
		sum += f.Weight
	}
	for _, f := range LearnFamilies() {
		want := 2 + float64(200-2*len(LearnFamilies()))*f.Weight/sum
		if got := float64(familyCount(tasks, f.Source)); got < want-1 || got > want+1 {
			t.Errorf("%s: %v tasks, want about %.1f", f.Source, got, want)
		}
	}
}
