package memorytest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/numeric"
)

// The numeric systems run the suite on streams of their own kind of task (docs/sim.md, part
// 3): NumericSuite returns the Suite of one of them.

// NumericSuite is the suite's configuration for the numeric system of the given kind
// ("regression", "hazard" or "entities"), built by newSys: its trajectories are tasks of that
// kind, and a state holds a trajectory when it was kept as the warm-up, learned from, or
// refused (a refusal is recorded too).
func NumericSuite(kind string, newSys func(*learn.Env) hippocam.MemorySystem) Suite {
	traj := func(i int) hippocam.Trajectory { return NumericTrajectory(kind, i) }
	return Suite{
		New:        newSys,
		Trajectory: traj,
		Task: func(i int) *hippocam.Task {
			t := traj(i).Task
			return &t
		},
		Holds: numericHolds,
	}
}

// numericHolds reports whether a numeric state accounts for the trajectory with the given id.
func numericHolds(state json.RawMessage, id string) bool {
	var st struct {
		Warmup *struct {
			Source string `json:"source"`
		} `json:"warmup"`
		Sources []string `json:"sources"`
		Refused []struct {
			Source string `json:"source"`
		} `json:"refused"`
	}
	if json.Unmarshal(state, &st) != nil {
		return false
	}
	if st.Warmup != nil && st.Warmup.Source == id {
		return true
	}
	return slices.Contains(st.Sources, id) || slices.ContainsFunc(st.Refused, func(r struct {
		Source string `json:"source"`
	}) bool {
		return r.Source == id
	})
}

// NumericTrajectory returns the i-th finished task of a stream of the given kind: a title, the
// visible data, the request, the agent's answer and the feedback the runner writes. The data
// are deterministic functions of i, so that runs repeat.
func NumericTrajectory(kind string, i int) hippocam.Trajectory {
	var title, request, answer, feedback string
	switch kind {
	case "regression":
		store := []string{"north", "south", "east"}[i%3]
		level := map[string]float64{"north": 120, "south": 95, "east": 140}[store]
		week := 10 + i/3
		value := func(w int) string { return fmt.Sprintf("%.1f", level+1.5*float64(w)+float64((w*7+i)%5)-2) }
		title = "Weekly sales forecast"
		request = fmt.Sprintf("%s\nobs sales[store=%s,week=%d] = %s\nobs sales[store=%s,week=%d] = %s\nestimate sales[store=%s,week=%d]",
			title, store, week-2, value(week-2), store, week-1, value(week-1), store, week)
		answer = fmt.Sprintf("sales[store=%s,week=%d] = %s", store, week, value(week-1))
		feedback = fmt.Sprintf("feedback: sales[store=%s,week=%d] = %s, outcome sales[store=%s,week=%d] = %s",
			store, week, value(week-1), store, week, value(week))
	case "hazard":
		plan := []string{"basic", "pro"}[i%2]
		n, base := 40+i%7, map[string]int{"basic": 6, "pro": 3}[plan]
		var b strings.Builder
		fmt.Fprintf(&b, "Cohort retention\n")
		atRisk := n
		for j := 1; j <= 3; j++ {
			events := (base + (i+j)%3) * atRisk / 40
			fmt.Fprintf(&b, "counts churn[plan=%s] interval=%d at_risk=%d events=%d\n", plan, j, atRisk, events)
			atRisk -= events
		}
		fmt.Fprintf(&b, "estimate-curve churn[plan=%s] over 3", plan)
		title, request = "Cohort retention", b.String()
		answer = fmt.Sprintf("churn[plan=%s] = [0.9, 0.8, 0.7]", plan)
		realized := map[string]string{"basic": "[0.86, 0.73, 0.62]", "pro": "[0.93, 0.86, 0.8]"}[plan]
		feedback = fmt.Sprintf("feedback: churn[plan=%s] = [0.9, 0.8, 0.7], outcome churn[plan=%s] = %s", plan, plan, realized)
	case "entities":
		title = "Spectrum scan"
		var b strings.Builder
		b.WriteString(title + "\n")
		emitters := [][2]float64{{101.2, -40}, {103.5, -47}, {107.9, -52}}
		seen := 0
		for k, e := range emitters {
			if (i+k)%4 == 3 { // each emitter is missed now and then
				continue
			}
			seen++
			jitter := float64((i*3+k*5)%7-3) * 0.01
			fmt.Fprintf(&b, "det freq=%.2f bw=0.20 power=%.1f\n", e[0]+jitter, e[1]+float64((i+k)%3)-1)
		}
		fmt.Fprintf(&b, "det freq=%.2f bw=0.20 power=-60.0\n", 110+float64(i%9)) // clutter
		b.WriteString("estimate-entities power")
		request = b.String()
		answer = "entity freq=101.2 power=-40"
		feedback = fmt.Sprintf("feedback: %d of %d answered entities matched", min(seen, 1), 1)
	default:
		panic("memorytest: no numeric kind " + kind)
	}
	id := fmt.Sprintf("n%03d", i)
	task := hippocam.Task{ID: id, Key: id, Attempt: 1, Messages: []hippocam.Message{
		{Role: hippocam.RoleSystem, Content: "You are an analyst. Answer each request on a line of its own."},
		{Role: hippocam.RoleUser, Content: request},
	}}
	return hippocam.Trajectory{
		ID:   id,
		Task: task,
		Messages: []hippocam.Message{
			{ID: "m1", Role: hippocam.RoleSystem, Kind: hippocam.KindRaw, Content: task.Messages[0].Content},
			{ID: "m2", Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: request},
			{ID: "m3", Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw, Content: answer},
		},
		Feedback: feedback,
		EndedAt:  time.Date(2025, 1, 1, 0, 0, i, 0, time.UTC),
	}
}

// BenchStateReads times what a read of a numeric cluster pays before Advise, at the state raw:
// decoding it the first time ("first"), and, for the same bytes, the decoded state kept from
// before ("cached").
func BenchStateReads[B, X, D any](b *testing.B, sys *numeric.System[B, X, D], raw json.RawMessage) {
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sys.Decode(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		if _, err := sys.ReadState(raw); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sys.ReadState(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
