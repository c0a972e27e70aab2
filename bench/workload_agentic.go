package bench

import (
	"fmt"

	"github.com/hippocam/hippocam"
)

// saltAgentic keeps the agentic workload's random choices apart from the other workloads'.
const saltAgentic = 0xa6e471c0

// Agentic generates a long tool-heavy agent session of about tokens content tokens (counted with
// tok): a platform migration that moves one service after another to a new cluster. Intents nest
// three deep (the migration, one service, one task: survey, rewrite, test, deploy); tasks make
// parallel tool calls whose results are large (rounds of 300 to 3,000 tokens: config, logs,
// schemas, test output) and hold a few facts each (eight keys per service); facts change
// as the work goes on (a later value supersedes the earlier ones, sometimes for a service moved
// long before); logs and schemas carry `detail` facts. The questions come at the end: the latest
// value of updated facts, details, facts from early in the session that never changed, and one
// key nothing ever named. The same seed, size and tokenizer give the same workload.
func Agentic(seed int64, tokens int, tok hippocam.Tokenizer) *Workload {
	s := newScript(seed, saltAgentic, tok)
	const root = "Migrate the platform to the new cluster"
	budget := tokens - 150 // the closing message and the questions
	s.user("#open "+root+" | every service runs on the new cluster",
		"We move every service to the new cluster, one at a time.",
		s.set("cluster_version", s.fresh("cluster_version", s.version)))
	for p := 0; s.tokens < budget; p++ {
		s.agenticPhase(p, budget)
	}
	s.user("#close "+root, "!say every service runs on the new cluster")
	s.agenticQuestions()
	return s.workload(NameAgentic, tokens)
}

// agenticPhase moves service p: up to four tasks, each an intent under the service's.
func (s *script) agenticPhase(p, budget int) {
	svc := fmt.Sprintf("svc%d", p)
	phase := "Move " + svc + " to the new cluster"
	s.user("#open "+phase+" | "+svc+" serves from the new cluster", "!say moving "+svc)
	var closing string
	for _, task := range []func(svc, closing string, budget int) string{s.survey, s.rewrite, s.smokeTest, s.deploy} {
		if s.tokens >= budget {
			break
		}
		closing = task(svc, closing, budget)
	}
	s.user(closing, "#close "+phase, "!say "+svc+" moved")
}

// share is the size of one of the n tool results of a round of lo to hi tokens, cut to what the
// budget has left.
func (s *script) share(n, lo, hi, budget int) int {
	return s.budgetFor((lo+s.rng.IntN(hi-lo))/n, (budget-s.tokens)/n+s.tokens)
}

// survey reads the service's config, logs and schema in three parallel calls.
func (s *script) survey(svc, closing string, budget int) string {
	label := "Survey " + svc
	s.user(closing, "#open "+label+" | its config, logs and schema are read",
		`!call read_config {"service":"`+svc+`"}`,
		`!call tail_logs {"service":"`+svc+`","lines":400}`,
		`!call describe_schema {"service":"`+svc+`"}`)
	size := s.share(3, 1200, 3000, budget)
	s.tool(s.mix([]string{
		s.set(svc+"_port", s.fresh(svc+"_port", s.port)),
		s.set(svc+"_replicas", s.fresh(svc+"_replicas", s.replicas)),
		s.set(svc+"_host", s.fresh(svc+"_host", s.host)),
	}, s.code("deploy/"+svc+"/config.go", size))...)
	s.tool(s.mix([]string{s.setDetail(svc+"_oncall", s.person())}, s.logs(svc, size))...)
	s.tool(s.mix([]string{s.setDetail(svc+"_schema_checksum", fmt.Sprintf("sha-%08x", s.rng.Uint32()))}, s.rows(svc+"_schema", size))...)
	return "#close " + label
}

// rewrite edits the deployment manifest; the edit often changes the replica count.
func (s *script) rewrite(svc, closing string, budget int) string {
	label := "Rewrite the " + svc + " manifest"
	s.user(closing, "#open "+label+" | the new manifest validates",
		`!call edit_manifest {"service":"`+svc+`"}`)
	var facts []string
	if s.rng.IntN(10) < 6 {
		facts = append(facts, s.set(svc+"_replicas", s.fresh(svc+"_replicas", s.replicas)))
	}
	s.tool(s.mix(facts, s.code("deploy/"+svc+"/manifest.go", s.share(1, 800, 2000, budget)))...)
	return "#close " + label
}

// smokeTest runs the tests and a load test in parallel; a failure is fixed by moving the port
// and running the tests again.
func (s *script) smokeTest(svc, closing string, budget int) string {
	label := "Test " + svc + " on the new cluster"
	s.user(closing, "#open "+label+" | the smoke tests pass",
		`!call run_tests {"service":"`+svc+`"}`,
		`!call load_test {"service":"`+svc+`","rps":200}`)
	size := s.share(2, 1000, 2400, budget)
	fail := s.rng.IntN(10) < 3
	status := "pass"
	if fail {
		status = fmt.Sprintf("fail in Test%d, port in use", s.rng.IntN(50))
	}
	s.tool(s.mix([]string{s.set(svc+"_tests", status)}, s.testOutput(size))...)
	s.tool(s.mix([]string{s.set(svc+"_p95_latency", fmt.Sprintf("%d ms", s.rng.IntN(400)+20))}, s.logs(svc, size))...)
	if fail {
		s.user(s.set(svc+"_port", s.fresh(svc+"_port", s.port)), `!call run_tests {"service":"`+svc+`"}`)
		s.tool(s.mix([]string{s.set(svc+"_tests", "pass")}, s.testOutput(s.share(1, 300, 800, budget)))...)
	}
	return "#close " + label
}

// deploy rolls the service out. The rollout may bump the cluster version and may rebalance a
// service moved earlier, superseding one of its facts.
func (s *script) deploy(svc, closing string, budget int) string {
	label := "Deploy " + svc
	s.user(closing, "#open "+label+" | the new pods are healthy",
		`!call deploy {"service":"`+svc+`","cluster":"new"}`)
	facts := []string{s.set(svc+"_version", s.fresh(svc+"_version", s.version))}
	if s.rng.IntN(10) < 4 {
		facts = append(facts, s.set("cluster_version", s.fresh("cluster_version", s.version)))
	}
	var p int
	if _, err := fmt.Sscanf(svc, "svc%d", &p); err == nil && p > 0 && s.rng.IntN(10) < 3 {
		old := fmt.Sprintf("svc%d", s.rng.IntN(p))
		key := old + "_" + pick(s.rng, []string{"replicas", "host", "port"})
		gen := map[string]func() string{old + "_replicas": s.replicas, old + "_host": s.host, old + "_port": s.port}[key]
		facts = append(facts, s.set(key, s.fresh(key, gen)))
	}
	s.tool(s.mix(facts, s.rows(svc+"_rollout", s.share(1, 800, 1800, budget)))...)
	return "#close " + label
}

// agenticQuestions asks, in a random order: the cluster version (updated along the way), four
// other updated facts, four details (one from each third of the session and one more), three
// facts of the first fifth of the session that never changed, and one key never named.
func (s *script) agenticQuestions() {
	taken := map[string]bool{"cluster_version": true}
	keys := []string{"cluster_version"}
	keys = append(keys, s.pickKeys(s.keys(func(f *fact) bool { return len(f.values) > 1 && !f.detail }), 4, taken)...)
	details := s.keys(func(f *fact) bool { return f.detail })
	for _, part := range thirds(details) {
		keys = append(keys, s.pickKeys(part, 1, taken)...)
	}
	keys = append(keys, s.pickKeys(details, 1, taken)...)
	early := len(s.lines) / 5
	keys = append(keys, s.pickKeys(s.keys(func(f *fact) bool { return len(f.values) == 1 && !f.detail && f.first < early }), 3, taken)...)
	keys = append(keys, s.unknownKey("legacy_dns_zone"))
	s.askAll(keys)
}

// thirds cuts keys into three parts of about the same length.
func thirds(keys []string) [3][]string {
	n := len(keys)
	return [3][]string{keys[:n/3], keys[n/3 : 2*n/3], keys[2*n/3:]}
}

// testOutput is test-runner filler.
func (s *script) testOutput(tokens int) []string {
	return s.fill(tokens, func(i int) string {
		return fmt.Sprintf("ok Test%d%s (0.%03ds)", i, pick(s.rng, []string{"Handler", "Store", "Client", "Codec", "Route"}), s.rng.IntN(1000))
	})
}

func (s *script) version() string {
	return fmt.Sprintf("v%d.%d.%d", s.rng.IntN(4)+1, s.rng.IntN(20), s.rng.IntN(30))
}

func (s *script) port() string { return fmt.Sprint(2000 + s.rng.IntN(60000)) }

func (s *script) replicas() string { return fmt.Sprint(s.rng.IntN(24) + 1) }

func (s *script) host() string {
	return fmt.Sprintf("node-%02d.zone-%c", s.rng.IntN(64), 'a'+rune(s.rng.IntN(6)))
}

func (s *script) person() string {
	first := []string{"Dana", "Ravi", "Mia", "Tomas", "Aiko", "Lena", "Omar", "Iris", "Yuki", "Bruno"}
	last := []string{"Whitfield", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Costa", "Novak", "Haddad"}
	return pick(s.rng, first) + " " + pick(s.rng, last)
}
