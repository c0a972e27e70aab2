package numeric_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/numeric"
	"github.com/hippocam/hippocam/tokenizer"
)

// tally is a toy runtime for the framework's tests: it binds one target name, extracts
// outcomes of that target, and forecasts their mean.
type tally struct{}

type tallyBindings struct {
	Target string `json:"target"`
}

type tallyOutcome struct {
	numeric.Key
	Value numeric.Number `json:"value"`
}

type tallyBatch struct {
	Requested []numeric.Key  `json:"requested"`
	Outcomes  []tallyOutcome `json:"outcomes"`
}

type tallyValue struct {
	Source string  `json:"source"`
	V      float64 `json:"v"`
}

type tallyData struct {
	Values []tallyValue `json:"values"`
}

func (tally) Name() string                            { return "tally" }
func (tally) Description() string                     { return "means of outcomes" }
func (tally) Operator() string                        { return "tally_v1" }
func (tally) AdapterContract() string                 { return "Bind target to the name of the quantity." }
func (tally) BindingsSchema() json.RawMessage         { return json.RawMessage(`{"type":"object"}`) }
func (tally) ExtractorContract(*tallyBindings) string { return "Emit the outcomes." }
func (tally) BatchSchema(*tallyBindings) json.RawMessage {
	return json.RawMessage(`{"type":"object"}`)
}

func (tally) CheckBindings(b *tallyBindings, events []string) error {
	for _, e := range events {
		if numeric.Grounded(b.Target, e) {
			return nil
		}
	}
	return fmt.Errorf("target %q does not occur in the tasks", b.Target)
}

func (tally) CheckBatch(b *tallyBindings, x *tallyBatch, event string) error {
	for i, o := range x.Outcomes {
		if err := numeric.CheckKey(o.Key, event, fmt.Sprintf("outcome %d", i+1)); err != nil {
			return err
		}
		if _, err := numeric.CheckNumber(o.Value, event, fmt.Sprintf("outcome %d", i+1)); err != nil {
			return err
		}
	}
	return nil
}

func (tally) Ingest(d *tallyData, b *tallyBindings, x *tallyBatch, ev numeric.Event) {
	for _, o := range x.Outcomes {
		v, _ := numeric.Float(o.Value)
		d.Values = append(d.Values, tallyValue{ev.Source, v})
	}
}

func (tally) Forget(d *tallyData, sources []string) {
	var keep []tallyValue
	for _, v := range d.Values {
		if !contains(sources, v.Source) {
			keep = append(keep, v)
		}
	}
	d.Values = keep
}

func (tally) CheckReplay(d *tallyData, b *tallyBindings, cur *tallyBatch) error {
	switch {
	case len(cur.Requested) == 0:
		return errors.New("the current task asks for nothing")
	case len(d.Values) == 0:
		return errors.New("the warm-up holds no outcome")
	}
	return nil
}

func (tally) Advise(d *tallyData, b *tallyBindings, cur *tallyBatch, ev numeric.Event) numeric.Advice {
	if len(d.Values) == 0 {
		return numeric.Advice{}
	}
	sum := 0.0
	for _, v := range d.Values {
		sum += v.V
	}
	var lines []string
	for _, k := range cur.Requested {
		lines = append(lines, fmt.Sprintf("forecast %s = %g (support %d)", k, sum/float64(len(d.Values)), len(d.Values)))
	}
	return numeric.Advice{Head: "Means so far.", Lines: lines}
}

func (tally) Entries(d *tallyData) int { return len(d.Values) }

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// script is a model that answers each role from its own queue, and records the instructions.
type script struct {
	mu      sync.Mutex
	answers map[hippocam.CallRole][]string
	seen    map[hippocam.CallRole][]string
	fail    error
	// pick, when set, answers the extractor by the instruction instead of the queue.
	pick func(instruction string) string
}

func (m *script) Complete(_ context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return nil, m.fail
	}
	if m.seen == nil {
		m.seen = map[hippocam.CallRole][]string{}
	}
	instruction := req.Messages[len(req.Messages)-1].Content
	m.seen[req.Role] = append(m.seen[req.Role], instruction)
	if m.pick != nil && req.Role == hippocam.CallExtractor {
		return &hippocam.Response{Message: hippocam.Message{Role: hippocam.RoleAssistant, Content: m.pick(instruction)}}, nil
	}
	q := m.answers[req.Role]
	if len(q) == 0 {
		return nil, fmt.Errorf("no answer left for role %s", req.Role)
	}
	a := q[0]
	if len(q) > 1 {
		m.answers[req.Role] = q[1:]
	}
	return &hippocam.Response{Message: hippocam.Message{Role: hippocam.RoleAssistant, Content: a}}, nil
}

func (m *script) calls(role hippocam.CallRole) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.seen[role])
}

func newSystem(t *testing.T, m hippocam.Model) *numeric.System[tallyBindings, tallyBatch, tallyData] {
	t.Helper()
	tok, err := tokenizer.Default()
	if err != nil {
		t.Fatal(err)
	}
	return numeric.NewSystem[tallyBindings, tallyBatch, tallyData](tally{}, &learn.Env{Model: m, Tok: tok})
}

func task(id, text string) hippocam.Task {
	return hippocam.Task{ID: id, Key: id, Messages: []hippocam.Message{
		{Role: hippocam.RoleSystem, Content: "You forecast things."},
		{Role: hippocam.RoleUser, Content: text},
	}}
}

func trajectory(id, text, answer, feedback string) hippocam.Trajectory {
	tk := task(id, text)
	msgs := append(tk.Messages[1:], hippocam.Message{Role: hippocam.RoleAssistant, Content: answer})
	return hippocam.Trajectory{ID: id, Task: tk, Messages: msgs, Feedback: feedback}
}

const (
	warmText  = "Forecast\nobs x[k=a] = 4\nestimate x[k=a]"
	warmFB    = "feedback: x[k=a] = 4, outcome x[k=a] = 6"
	nextText  = "Forecast\nobs x[k=a] = 7\nestimate x[k=a]"
	goodBind  = `{"target":"x"}`
	warmBatch = `{"requested":[{"target":"x","dims":{"k":"a"}}],"outcomes":[{"target":"x","dims":{"k":"a"},"value":4},{"target":"x","dims":{"k":"a"},"value":6}]}`
	nextBatch = `{"requested":[{"target":"x","dims":{"k":"a"}}],"outcomes":[{"target":"x","dims":{"k":"a"},"value":7}]}`
	// feedbackBatch is what the feedback of the second task adds.
	feedbackBatch = `{"requested":[],"outcomes":[{"target":"x","dims":{"k":"a"},"value":7}]}`
)

func state(t *testing.T, s *numeric.System[tallyBindings, tallyBatch, tallyData], raw json.RawMessage) *numeric.State[tallyBindings, tallyData] {
	t.Helper()
	st, err := s.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	m := &script{answers: map[hippocam.CallRole][]string{
		hippocam.CallAdapter:   {goodBind},
		hippocam.CallExtractor: {warmBatch, nextBatch, feedbackBatch},
	}}
	s := newSystem(t, m)
	raw, err := s.Update(ctx, nil, []hippocam.Trajectory{trajectory("t1", warmText, "x[k=a] = 4.5", warmFB)})
	if err != nil {
		t.Fatal(err)
	}
	if st := state(t, s, raw); st.Status != numeric.Warming || st.Warmup == nil || !strings.Contains(st.Warmup.Event, "outcome x[k=a] = 6") {
		t.Fatalf("after the first trajectory: %+v", st)
	}
	if strings.Contains(state(t, s, raw).Warmup.Event, "4.5") {
		t.Error("the warm-up event holds the agent's answer")
	}
	t2 := task("t2", nextText)
	if adv, err := s.Read(ctx, raw, &t2, 1000); err != nil || adv.Text != "" {
		t.Fatalf("a warming cluster's advisory = %q, %v", adv.Text, err)
	}
	next, result, err := s.Configure(ctx, raw, &t2)
	if err != nil || result != numeric.Configured {
		t.Fatalf("Configure = %q, %v", result, err)
	}
	st := state(t, s, next)
	if st.Bindings == nil || st.Bindings.Target != "x" || st.Events != 1 || len(st.Data.Values) != 2 || st.Warmup != nil {
		t.Fatalf("configured state: %+v", st)
	}
	if n := m.calls(hippocam.CallExtractor); n != 2 {
		t.Errorf("configuration made %d extractor calls, want 2 (the warm-up, the current task)", n)
	}
	if !strings.Contains(m.seen[hippocam.CallAdapter][0], "Memory system: tally (tally_v1)") ||
		!strings.Contains(m.seen[hippocam.CallAdapter][0], "Completed task (the warm-up):\n[user]\nForecast") {
		t.Errorf("adapter instruction:\n%s", m.seen[hippocam.CallAdapter][0])
	}
	adv, err := s.Read(ctx, next, &t2, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(adv.Text, "- forecast x[k=a] = 5 (support 2)") || !strings.HasSuffix(adv.Text, numeric.Caution) || adv.Entries != 1 {
		t.Errorf("advisory:\n%s", adv.Text)
	}
	if n := m.calls(hippocam.CallExtractor); n != 2 {
		t.Errorf("reading the configured task extracted it again (%d calls)", n)
	}
	again, result, err := s.Configure(ctx, next, &t2)
	if again != nil || result != "" || err != nil {
		t.Errorf("configuring a configured cluster: %s %q %v", again, result, err)
	}
	after, err := s.Update(ctx, next, []hippocam.Trajectory{trajectory("t2", nextText, "x[k=a] = 5", "feedback: x[k=a] = 5, outcome x[k=a] = 7")})
	if err != nil {
		t.Fatal(err)
	}
	// The task's own records were extracted at its start: only the rest of the trajectory (the
	// feedback) is extracted now, and the two batches are joined.
	if st := state(t, s, after); st.Events != 2 || len(st.Data.Values) != 4 || s.Entries(after) != 4 {
		t.Errorf("after the second trajectory: %+v", st)
	}
	if n := m.calls(hippocam.CallExtractor); n != 3 {
		t.Errorf("%d extractor calls, want 3", n)
	} else if last := m.seen[hippocam.CallExtractor][2]; strings.Contains(last, "obs x[k=a] = 7") || !strings.Contains(last, "outcome x[k=a] = 7") {
		t.Errorf("the trajectory's extraction was not limited to what the task start had not seen:\n%s", last)
	}
	if same, err := s.Update(ctx, after, []hippocam.Trajectory{trajectory("t2", nextText, "", "")}); err != nil || string(same) != string(after) {
		t.Errorf("a trajectory applied twice changed the state: %v", err)
	}
	forgot, err := s.Forget(after, []string{"t1"})
	if err != nil {
		t.Fatal(err)
	}
	if st := state(t, s, forgot); len(st.Data.Values) != 2 || contains(st.Sources, "t1") {
		t.Errorf("after forgetting the warm-up: %+v", st)
	}
}

func TestAdapterFailsTwice(t *testing.T) {
	ctx := context.Background()
	m := &script{answers: map[hippocam.CallRole][]string{hippocam.CallAdapter: {`{"target":"price"}`}}}
	s := newSystem(t, m)
	raw, _ := s.Update(ctx, nil, []hippocam.Trajectory{trajectory("t1", warmText, "", warmFB)})
	t2 := task("t2", nextText)
	next, result, err := s.Configure(ctx, raw, &t2)
	if err != nil || result != numeric.Failed {
		t.Fatalf("Configure = %q, %v", result, err)
	}
	if n := m.calls(hippocam.CallAdapter); n != 2 {
		t.Errorf("%d adapter calls, want 2 (one repair)", n)
	}
	if !strings.Contains(m.seen[hippocam.CallAdapter][1], `target "price" does not occur`) {
		t.Errorf("the repair does not quote the error:\n%s", m.seen[hippocam.CallAdapter][1])
	}
	st := state(t, s, next)
	if st.Status != numeric.Failed || !strings.Contains(st.Problem, "price") || st.Bindings != nil {
		t.Errorf("failed state: %+v", st)
	}
	if adv, err := s.Read(ctx, next, &t2, 1000); err != nil || adv.Text != "" {
		t.Errorf("a failed cluster advises %q, %v", adv.Text, err)
	}
	if again, res, err := s.Configure(ctx, next, &t2); again != nil || res != "" || err != nil || m.calls(hippocam.CallAdapter) != 2 {
		t.Errorf("a failed cluster was configured again")
	}
	later, err := s.Update(ctx, next, []hippocam.Trajectory{trajectory("t2", nextText, "", "")})
	if err != nil || s.Entries(later) != 0 || m.calls(hippocam.CallExtractor) != 0 {
		t.Errorf("a failed cluster learned: %v", err)
	}
}

func TestAdapterRepairedByReplay(t *testing.T) {
	// The first bindings pass their own check but the warm-up replay yields nothing (the
	// extractor finds no outcome): the error goes back to the adapter, whose second answer
	// is accepted.
	ctx := context.Background()
	m := &script{answers: map[hippocam.CallRole][]string{
		hippocam.CallAdapter:   {goodBind, goodBind},
		hippocam.CallExtractor: {`{"requested":[],"outcomes":[]}`, nextBatch, warmBatch, nextBatch},
	}}
	s := newSystem(t, m)
	raw, _ := s.Update(ctx, nil, []hippocam.Trajectory{trajectory("t1", warmText, "", warmFB)})
	t2 := task("t2", nextText)
	_, result, err := s.Configure(ctx, raw, &t2)
	if err != nil || result != numeric.Configured {
		t.Fatalf("Configure = %q, %v", result, err)
	}
	if !strings.Contains(m.seen[hippocam.CallAdapter][1], "the warm-up holds no outcome") {
		t.Errorf("the replay's error was not shown to the adapter:\n%s", m.seen[hippocam.CallAdapter][1])
	}
}

func TestExtractionRefused(t *testing.T) {
	ctx := context.Background()
	bad := `{"requested":[],"outcomes":[{"target":"x","dims":{"k":"a"},"value":7.0}]}` // 7.0 is not written
	m := &script{answers: map[hippocam.CallRole][]string{
		hippocam.CallAdapter:   {goodBind},
		hippocam.CallExtractor: {warmBatch, nextBatch, bad},
	}}
	s := newSystem(t, m)
	raw, _ := s.Update(ctx, nil, []hippocam.Trajectory{trajectory("t1", warmText, "", warmFB)})
	t2 := task("t2", nextText)
	raw, _, _ = s.Configure(ctx, raw, &t2)
	before := state(t, s, raw)
	after, err := s.Update(ctx, raw, []hippocam.Trajectory{trajectory("t2", nextText, "", "feedback: x[k=a] = 5, outcome x[k=a] = 7")})
	if err != nil {
		t.Fatal(err)
	}
	st := state(t, s, after)
	if len(st.Refused) != 1 || st.Refused[0].Source != "t2" || !strings.Contains(st.Refused[0].Error, "7.0 does not occur") {
		t.Errorf("refusals: %+v", st.Refused)
	}
	if len(st.Data.Values) != len(before.Data.Values) || st.Events != before.Events {
		t.Errorf("a refused batch changed the data: %+v", st.Data)
	}
	// The task's own batch is cached, so the rest is extracted first (and repaired once); when
	// it still fails, the whole trajectory is extracted (and repaired once) before refusing.
	if n := m.calls(hippocam.CallExtractor); n != 6 {
		t.Errorf("%d extractor calls, want 6 (2 to configure, the rest and its repair, the whole and its repair)", n)
	}
}

func TestModelErrorChangesNothing(t *testing.T) {
	ctx := context.Background()
	m := &script{answers: map[hippocam.CallRole][]string{hippocam.CallAdapter: {goodBind}}}
	s := newSystem(t, m)
	raw, _ := s.Update(ctx, nil, []hippocam.Trajectory{trajectory("t1", warmText, "", warmFB)})
	m.fail = errors.New("provider down")
	t2 := task("t2", nextText)
	next, result, err := s.Configure(ctx, raw, &t2)
	if err == nil || !strings.Contains(err.Error(), "provider down") || next != nil || result != "" {
		t.Errorf("Configure with the model down = %s %q %v", next, result, err)
	}
	if _, err := s.Update(ctx, raw, []hippocam.Trajectory{trajectory("t2", nextText, "", "")}); err == nil {
		t.Error("Update with the model down succeeded")
	}
	// A model error inside the adapter's replay is not the adapter's fault either.
	m2 := &script{answers: map[hippocam.CallRole][]string{hippocam.CallAdapter: {goodBind}}}
	s2 := newSystem(t, m2)
	raw2, _ := s2.Update(ctx, nil, []hippocam.Trajectory{trajectory("t1", warmText, "", warmFB)})
	if _, res, err := s2.Configure(ctx, raw2, &t2); err == nil || res != "" {
		t.Errorf("an extractor failure inside the replay: %q, %v", res, err)
	}
}

func TestPrepareConcurrent(t *testing.T) {
	ctx := context.Background()
	// Starts race, so the extractor answers by the event it is shown.
	m := &script{answers: map[hippocam.CallRole][]string{hippocam.CallAdapter: {goodBind}}, pick: func(instruction string) string {
		if strings.Contains(instruction, "obs x[k=a] = 4") {
			return warmBatch
		}
		return nextBatch
	}}
	s := newSystem(t, m)
	cs := inmem.New()
	raw, _ := s.Update(ctx, nil, []hippocam.Trajectory{trajectory("t1", warmText, "", warmFB)})
	c := &hippocam.Cluster{Tenant: "a", ID: "c1", System: "tally", State: raw}
	if err := cs.CreateCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]string, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t2 := task(fmt.Sprintf("t%d", i+2), nextText)
			c, err := cs.Cluster(ctx, "a", "c1")
			if err != nil {
				t.Error(err)
				return
			}
			_, res, err := learn.Prepare(ctx, cs, s, c, &t2)
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	got, _ := cs.Cluster(ctx, "a", "c1")
	if st := state(t, s, got.State); st.Status != numeric.Configured {
		t.Errorf("after concurrent starts: %+v", st)
	}
	if !contains(results, numeric.Configured) {
		t.Errorf("no start reports the configuration: %q", results)
	}
}

func TestRenderBudget(t *testing.T) {
	ctx := context.Background()
	m := &script{answers: map[hippocam.CallRole][]string{
		hippocam.CallAdapter:   {goodBind},
		hippocam.CallExtractor: {warmBatch, nextBatch},
	}}
	s := newSystem(t, m)
	raw, _ := s.Update(ctx, nil, []hippocam.Trajectory{trajectory("t1", warmText, "", warmFB)})
	t2 := task("t2", nextText)
	raw, _, _ = s.Configure(ctx, raw, &t2)
	if adv, err := s.Read(ctx, raw, &t2, 10); err != nil || adv.Text != "" {
		t.Errorf("an advisory that cannot fit its budget = %q, %v", adv.Text, err)
	}
}

func TestGrounded(t *testing.T) {
	ev := "obs sales[store=north,week=12] = 120.5\ndet freq=103.42 bw=0.20 power=-45.1\nstores: 3\n" +
		"The total came to 118.4. Weeks 10-5 of the north-east region, rate x=-3."
	for lit, want := range map[string]bool{
		"12": true, "120.5": true, "120": false, "0.20": true, "0.2": false, "45.1": false, "-45.1": true,
		"store": true, "stores": true, "north": true, "nort": false, "103.4": false, "3": true, "": false,
		"118.4": true, "118": false, "-5": false, "10": true, "east": false, "north-east": true, "-3": true,
	} {
		if got := numeric.Grounded(lit, ev); got != want {
			t.Errorf("Grounded(%q) = %v, want %v", lit, got, want)
		}
	}
}

func TestKeyString(t *testing.T) {
	k := numeric.Key{Target: "sales", Dims: map[string]string{"week": "12", "store": "north"}}
	if got := k.String(); got != "sales[store=north,week=12]" {
		t.Errorf("Key.String() = %q", got)
	}
	if got := (numeric.Key{Target: "churn"}).String(); got != "churn" {
		t.Errorf("Key.String() = %q", got)
	}
}

// One System serves every cluster of its runtime: a batch remembered for an event under one
// cluster's bindings is never handed to a cluster bound otherwise.
func TestBatchCacheKeyedByBindings(t *testing.T) {
	ctx := context.Background()
	const text = "Forecast\nobs x[k=a] = 7\nobs y[k=a] = 9\nestimate x[k=a]\nestimate y[k=a]"
	m := &script{answers: map[hippocam.CallRole][]string{}, pick: func(instruction string) string {
		if strings.Contains(instruction, `Bindings: {"target":"y"}`) {
			return `{"requested":[{"target":"y","dims":{"k":"a"}}],"outcomes":[{"target":"y","dims":{"k":"a"},"value":9}]}`
		}
		return `{"requested":[{"target":"x","dims":{"k":"a"}}],"outcomes":[{"target":"x","dims":{"k":"a"},"value":7}]}`
	}}
	s := newSystem(t, m)
	configured := func(target string) json.RawMessage {
		raw, err := json.Marshal(numeric.State[tallyBindings, tallyData]{Status: numeric.Configured, Bindings: &tallyBindings{Target: target},
			Data: tallyData{Values: []tallyValue{{"w", 1}}}, Events: 1})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	tk := task("t", text)
	ax, err := s.Read(ctx, configured("x"), &tk, 1000)
	if err != nil {
		t.Fatal(err)
	}
	ay, err := s.Read(ctx, configured("y"), &tk, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ax.Text, "forecast x[k=a]") || !strings.Contains(ay.Text, "forecast y[k=a]") || strings.Contains(ay.Text, "forecast x") {
		t.Errorf("advisories under two bindings:\n%s\n---\n%s", ax.Text, ay.Text)
	}
}
