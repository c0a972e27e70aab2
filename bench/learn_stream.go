package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// The task streams of `hippocam bench learn`: JSON Lines in the format of docs/sim.md part 2 (id,
// source, messages, env), as bench/learnstream reads them. A stream interleaves task families, each
// one kind of experience a memory can keep or lose; a family's name is its tasks' hidden source.
// Everything is drawn from one seed, so a stream is the same bytes every time.

// The families of a generated stream, by source.
const (
	FamilyCarrier   = "carrier"          // conditional: two decisions, each ruled by one tag
	FamilyRetail    = "refund-retail"    // siblings: one title, the rule picked by a tag
	FamilyWholesale = "refund-wholesale" // the other sibling, with the opposite rule
	FamilyTriage    = "triage"           // conditional, asked under three titles (over-splits)
	FamilyEscalate  = "escalation"       // no tags: its lesson holds everywhere its key is asked
	FamilyReplica   = "replica"          // the rule flips half-way through the family
	FamilyVendor    = "vendor"           // facts stated early, asked late
	FamilyIncident  = "incident"         // a detail stated, asked by the next task of the family
	FamilyCodename  = "codename"         // nothing to learn: every value is right
)

// LearnFamily describes one family of a generated stream.
type LearnFamily struct {
	Source string `json:"source"`
	// Kind is what the family tests, in a few words; Weight its share of the stream.
	Kind   string  `json:"kind"`
	Weight float64 `json:"weight"`
}

// LearnFamilies lists the families of every generated stream, in report order.
func LearnFamilies() []LearnFamily {
	return []LearnFamily{
		{FamilyCarrier, "conditional decisions (two keys, each ruled by one tag)", 3},
		{FamilyRetail, "sibling of refund-wholesale under the same title", 2},
		{FamilyWholesale, "sibling of refund-retail, the opposite rule", 2},
		{FamilyTriage, "conditional decision under three titles", 3},
		{FamilyEscalate, "untagged decision sharing triage's key", 1.5},
		{FamilyReplica, "the rule flips half-way", 2.5},
		{FamilyVendor, "facts stated early, asked late", 2.5},
		{FamilyIncident, "a detail asked by the next task", 2},
		{FamilyCodename, "nothing to learn (every value right)", 1.5},
	}
}

// StreamTask is one line of a generated stream.
type StreamTask struct {
	ID       string          `json:"id"`
	Source   string          `json:"source"`
	Messages []StreamMessage `json:"messages"`
	Env      StreamEnv       `json:"env"`
}

// StreamMessage is one message of a task's specification.
type StreamMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// StreamEnv scores a task: what the runner compares the answer with and writes feedback from.
type StreamEnv struct {
	Decide map[string]StreamDecision `json:"decide,omitempty"`
	Ask    map[string]string         `json:"ask,omitempty"`
}

// StreamDecision is one decision's right values (more than one: a lucky instance) and the
// reference the feedback names.
type StreamDecision struct {
	Right     []string `json:"right"`
	Reference string   `json:"reference"`
}

// Scored reports whether the task has an item the runner scores.
func (t *StreamTask) Scored() bool { return len(t.Env.Decide)+len(t.Env.Ask) > 0 }

// learnSystem is the system message every generated task starts with.
const learnSystem = "You are an operations assistant for a mail-order company. Work through the request, " +
	"answer each decision on a line of its own, and state the facts you are asked for."

// GenerateStream draws a stream of n tasks from seed: families interleaved at random in
// proportion to their weights, every family present at least twice. It fails for n too small
// to hold every family twice.
func GenerateStream(seed int64, n int) ([]StreamTask, error) {
	fams := LearnFamilies()
	if n < 2*len(fams) {
		return nil, fmt.Errorf("generate stream: %d tasks cannot hold %d families twice", n, len(fams))
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x6c6561726e))
	order := schedule(r, fams, n)
	counts := map[string]int{}
	for _, f := range order {
		counts[f]++
	}
	g := &streamGen{r: r, total: counts, seen: map[string]int{}, vendors: map[string]string{}}
	tasks := make([]StreamTask, 0, n)
	for i, f := range order {
		j := g.seen[f]
		g.seen[f]++
		user, env, err := g.task(f, j)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, StreamTask{
			ID:     fmt.Sprintf("s%d-t%03d", seed, i+1),
			Source: f,
			Messages: []StreamMessage{
				{Role: "system", Content: learnSystem},
				{Role: "user", Content: user},
			},
			Env: env,
		})
	}
	return tasks, nil
}

// schedule gives each family its share of n (at least two tasks each, largest remainders first)
// and shuffles the result.
func schedule(r *rand.Rand, fams []LearnFamily, n int) []string {
	sum := 0.0
	for _, f := range fams {
		sum += f.Weight
	}
	counts := make([]int, len(fams))
	rest := n - 2*len(fams)
	used := 0
	type frac struct {
		i int
		f float64
	}
	var fracs []frac
	for i, f := range fams {
		exact := float64(rest) * f.Weight / sum
		counts[i] = 2 + int(exact)
		used += int(exact)
		fracs = append(fracs, frac{i, exact - float64(int(exact))})
	}
	slices.SortStableFunc(fracs, func(a, b frac) int {
		switch {
		case a.f > b.f:
			return -1
		case a.f < b.f:
			return 1
		}
		return 0
	})
	for k := 0; used < rest; k++ {
		counts[fracs[k%len(fracs)].i]++
		used++
	}
	var order []string
	for i, f := range fams {
		for range counts[i] {
			order = append(order, f.Source)
		}
	}
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return order
}

// WriteStream writes tasks as JSON Lines.
func WriteStream(tasks []StreamTask) ([]byte, error) {
	return jsonLines(tasks, func(t *StreamTask) string { return t.ID })
}

// jsonLines writes tasks as JSON Lines, one task a line; an error names the task (by id).
func jsonLines[T any](tasks []T, id func(*T) string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for i := range tasks {
		if err := enc.Encode(&tasks[i]); err != nil {
			return nil, fmt.Errorf("encode task %s: %w", id(&tasks[i]), err)
		}
	}
	return b.Bytes(), nil
}

// streamGen draws the tasks of one stream.
type streamGen struct {
	r     *rand.Rand
	total map[string]int // tasks per family in the whole stream
	seen  map[string]int // tasks per family drawn so far
	// vendors holds the latest stated value of every vendor fact; vendorKeys their order.
	vendors    map[string]string
	vendorKeys []string
	incident   string // the key of the last incident detail stated
	incidentV  string
}

func (g *streamGen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

// task draws the j-th task (from 0) of family f: its user message and env.
func (g *streamGen) task(f string, j int) (user string, env StreamEnv, err error) {
	switch f {
	case FamilyCarrier:
		user, env = g.carrier()
	case FamilyRetail:
		user, env = g.refund("retail", "credit")
	case FamilyWholesale:
		user, env = g.refund("wholesale", "cash")
	case FamilyTriage:
		user, env = g.triage()
	case FamilyEscalate:
		user, env = g.escalate()
	case FamilyReplica:
		user, env = g.replica(j >= g.total[f]/2)
	case FamilyVendor:
		user, env = g.vendor(j < (g.total[f]+1)/2)
	case FamilyIncident:
		user, env = g.incidentTask(j)
	case FamilyCodename:
		user, env = g.codename()
	default:
		return "", env, fmt.Errorf("generate stream: no generator for family %q", f)
	}
	return user, env, nil
}

// message joins a task's lines: the title first, then the tags (when any), the notes, the
// background (backgroundLines sentences of the pool, and a case number) and the rest. The
// background gives a task the bulk of a real request, so that a memory's budget holds only so
// many trajectories.
func (g *streamGen) message(title string, tags []string, notes string, lines ...string) string {
	out := []string{title}
	if len(tags) > 0 {
		out = append(out, "tags: "+strings.Join(tags, " "))
	}
	out = append(out, notes)
	for _, i := range g.r.Perm(len(background))[:backgroundLines] {
		out = append(out, background[i])
	}
	out = append(out, fmt.Sprintf("Case number %d.", 1000+g.r.IntN(9000)))
	return strings.Join(append(out, lines...), "\n")
}

// backgroundLines is how many sentences of background a task carries.
const backgroundLines = 4

// background is the pool of sentences a task's background is drawn from: the everyday context
// of an operations desk, which no decision depends on.
var background = []string{
	"The request came in through the shared inbox this morning and nobody has picked it up yet.",
	"Our service agreement promises an answer within one working day for every customer request.",
	"The weekly report counts how many requests were closed without a second round of questions.",
	"Finance asked that every change to an order be recorded before the end of the month.",
	"The customer has been with us for several years and rarely contacts support.",
	"A colleague from the night shift left a short note about this case in the ticket history.",
	"Please keep the reply short; the customer reads mail on a phone.",
	"The warehouse runs two shifts, and the late shift closes at ten in the evening.",
	"Last quarter we moved most of our suppliers to the new procurement portal.",
	"The team lead reviews a sample of closed requests every Friday afternoon.",
	"The order management system was upgraded last week and some screens look different.",
	"Two similar requests were handled yesterday by another member of the team.",
	"The customer attached photos and a copy of the original invoice.",
	"Holiday season starts soon, so volumes at the desk are expected to double.",
	"The legal team wants personal data kept out of free-text notes wherever possible.",
	"Remember to link the request to the customer's account before closing it.",
}

func decideLine(key string, options []string) string {
	return "decide " + key + ": " + strings.Join(options, " | ")
}

func one(key, right string) StreamEnv {
	return StreamEnv{Decide: map[string]StreamDecision{key: {Right: []string{right}, Reference: right}}}
}

var (
	carriers   = []string{"dhl", "ups", "fedex", "post"}
	carrierFor = map[string]string{"region-eu": "dhl", "region-us": "ups", "region-apac": "post"}
	goods      = []string{"ceramic tiles", "garden chairs", "printer toner", "wool blankets", "bicycle parts", "glass jars"}
)

// carrier: the carrier follows the region tag, the insurance the size tag; a third tag is noise.
func (g *streamGen) carrier() (string, StreamEnv) {
	region := g.pick([]string{"region-eu", "region-us", "region-apac"})
	size := g.pick([]string{"size-small", "size-bulk"})
	insured := map[string]string{"size-small": "no", "size-bulk": "yes"}[size]
	notes := fmt.Sprintf("The customer ordered %s; the warehouse has packed the parcels and waits for a label.", g.pick(goods))
	user := g.message("Choose how to ship the order", []string{"shipping", region, size}, notes,
		decideLine("carrier", carriers), decideLine("insurance", []string{"yes", "no"}))
	env := one("carrier", carrierFor[region])
	env.Decide["insurance"] = StreamDecision{Right: []string{insured}, Reference: insured}
	return user, env
}

// refund: both siblings share the title and the channel tag; only the segment tag tells them
// apart, and each wants another refund.
func (g *streamGen) refund(segment, right string) (string, StreamEnv) {
	channel := g.pick([]string{"channel-web", "channel-store"})
	notes := fmt.Sprintf("A %s customer sent back %s and asks for the money.", segment, g.pick(goods))
	user := g.message("Settle the refund request", []string{"refund", segment, channel}, notes,
		decideLine("refund", []string{"credit", "cash", "replace"}))
	return user, one("refund", right)
}

var (
	priorities  = []string{"low", "normal", "high", "urgent"}
	triageTitle = []string{"Triage the support ticket", "Triage this support ticket", "Support ticket triage"}
	priorityFor = map[string]string{"sev-1": "urgent", "sev-2": "high", "sev-3": "normal"}
)

// triage: the priority follows the severity tag; the title comes in three phrasings.
func (g *streamGen) triage() (string, StreamEnv) {
	sev := g.pick([]string{"sev-1", "sev-2", "sev-3"})
	tier := g.pick([]string{"tier-free", "tier-paid"})
	notes := fmt.Sprintf("A customer writes that an order of %s has not arrived.", g.pick(goods))
	user := g.message(g.pick(triageTitle), []string{"ticket", sev, tier}, notes, decideLine("priority", priorities))
	return user, one("priority", priorityFor[sev])
}

// escalate has no tags line: what is learnt from it holds for every task asking for a priority,
// unless a memory keeps it apart.
func (g *streamGen) escalate() (string, StreamEnv) {
	notes := fmt.Sprintf("Monitoring reports that the %s service stopped answering.", g.pick([]string{"billing", "search", "checkout", "login"}))
	return g.message("Escalate the outage report", nil, notes, decideLine("priority", priorities)), one("priority", "high")
}

// replica: the right mode follows the environment tag, and the rule changes for the family's
// second half.
func (g *streamGen) replica(flipped bool) (string, StreamEnv) {
	env := g.pick([]string{"env-prod", "env-staging"})
	rule := map[string]string{"env-prod": "sync", "env-staging": "async"}
	if flipped {
		rule = map[string]string{"env-prod": "async", "env-staging": "none"}
	}
	notes := fmt.Sprintf("The %s database gets a new replica in the %s zone.", strings.TrimPrefix(env, "env-"), g.pick([]string{"north", "south", "east", "west"}))
	user := g.message("Configure the database replica", []string{"database", env}, notes, decideLine("replica", []string{"sync", "async", "none"}))
	return user, one("replica", rule[env])
}

var (
	vendorNames = []string{"acme", "borealis", "cobalt", "dynamo", "ember", "fjord", "granite", "helix"}
	people      = []string{"Ada", "Bruno", "Chen", "Dara", "Elif", "Femi", "Greta", "Hugo", "Ines", "Jonas", "Kemi", "Luca"}
	terms       = []string{"net30", "net45", "net60"}
)

// vendor: the family's first half states facts about vendors (a new vendor, or a change to one
// already stated); its second half asks for two of them.
func (g *streamGen) vendor(stating bool) (string, StreamEnv) {
	const title = "Keep the vendor record"
	if stating {
		var lines []string
		if len(g.vendorKeys) < 2*len(vendorNames) && (len(g.vendorKeys) < 4 || g.r.IntN(3) > 0) {
			name := vendorNames[len(g.vendorKeys)/2]
			lines = append(lines, g.stateVendor("vendor_"+name+"_contact", g.pick(people)), g.stateVendor("vendor_"+name+"_terms", g.pick(terms)))
		} else { // a change: one of the stated facts takes a new value
			key := g.pick(g.vendorKeys)
			values := people
			if strings.HasSuffix(key, "_terms") {
				values = terms
			}
			lines = append(lines, g.stateVendor(key, g.other(values, g.vendors[key])))
		}
		return g.message(title, []string{"vendor"}, "The purchasing team sent the latest vendor details.", lines...), StreamEnv{}
	}
	env := StreamEnv{Ask: map[string]string{}}
	var lines []string
	for len(env.Ask) < min(2, len(g.vendorKeys)) {
		key := g.pick(g.vendorKeys)
		if _, dup := env.Ask[key]; dup {
			continue
		}
		env.Ask[key] = g.vendors[key]
		lines = append(lines, "!ask "+key)
	}
	return g.message(title, []string{"vendor"}, "Accounts payable needs the vendor details before the payment run.", lines...), env
}

func (g *streamGen) stateVendor(key, value string) string {
	if _, ok := g.vendors[key]; !ok {
		g.vendorKeys = append(g.vendorKeys, key)
	}
	g.vendors[key] = value
	return key + " := " + value
}

// other picks a value of xs other than v.
func (g *streamGen) other(xs []string, v string) string {
	for {
		if x := g.pick(xs); x != v {
			return x
		}
	}
}

// incidentTask: every task of the family states a detail (the host of its incident); every task
// but the first also asks for the previous task's.
func (g *streamGen) incidentTask(j int) (string, StreamEnv) {
	key := fmt.Sprintf("incident_%d_host", j+1)
	value := fmt.Sprintf("%s-%02d", g.pick([]string{"web", "db", "cache", "queue"}), g.r.IntN(40)+1)
	lines := []string{"detail " + key + " := " + value}
	env := StreamEnv{}
	if j > 0 {
		lines = append(lines, "!ask "+g.incident)
		env.Ask = map[string]string{g.incident: g.incidentV}
	}
	g.incident, g.incidentV = key, value
	return g.message("Summarise the incident", []string{"incident"}, "The on-call engineer attached the log of the night.", lines...), env
}

// codename: every option is right; the reference is drawn anew each time, so a memory that keeps
// it keeps nothing useful.
func (g *streamGen) codename() (string, StreamEnv) {
	options := []string{"aurora", "borealis", "cirrus"}
	train := g.pick([]string{"train-a", "train-b"})
	user := g.message("Pick a release codename", []string{"release", train}, "The next release branch is cut tomorrow.", decideLine("codename", options))
	return user, StreamEnv{Decide: map[string]StreamDecision{"codename": {Right: slices.Clone(options), Reference: g.pick(options)}}}
}
