package entities_test

import (
	"context"
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/learntest"
	"github.com/hippocam/hippocam/memory/entities"
	"github.com/hippocam/hippocam/memory/memorytest"
)

// TestSystemWithSim runs the system end to end on the simulated model: twelve spectrum scans
// of three emitters (each missed one scan in four) and a clutter detection; the adapter binds
// freq, bw (an extent) and power, the extractor copies the det lines, and the advisory for the
// thirteenth scan lists each emitter once, near its frequency and power, with its support.
func TestSystemWithSim(t *testing.T) {
	ctx := context.Background()
	sys := entities.New(learntest.Env(t))
	var state json.RawMessage
	const n = 12
	for i := range n {
		traj := memorytest.NumericTrajectory(entities.Name, i)
		if i == 1 {
			// The first reuse configures the cluster from the warm-up and the current task.
			st, status, err := sys.Configure(ctx, state, &traj.Task)
			if err != nil || status != "configured" {
				t.Fatalf("configure: %q, %v", status, err)
			}
			state = st
		}
		next, err := sys.Update(ctx, state, []hippocam.Trajectory{traj})
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		state = next
	}
	st, err := sys.Decode(state)
	if err != nil {
		t.Fatal(err)
	}
	if b := st.Bindings; b == nil || b.Identity != "freq" || b.Scale != "bw" || b.ScaleKind != entities.ScaleExtent || strings.Join(b.Values, ",") != "power" {
		t.Fatalf("bindings %+v", st.Bindings)
	}
	if len(st.Refused) > 0 {
		t.Fatalf("refused: %+v", st.Refused)
	}
	task := memorytest.NumericTrajectory(entities.Name, n).Task
	adv, err := sys.Read(ctx, state, &task, 2000)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("advisory:\n%s", adv.Text)
	line := regexp.MustCompile(`(?m)^- entity freq=(\S+) power=(\S+) \(support (\d+)\)$`)
	found := line.FindAllStringSubmatch(adv.Text, -1)
	for _, e := range [][2]float64{{101.2, -40}, {103.5, -47}, {107.9, -52}} {
		k := 0
		for _, m := range found {
			f, _ := strconv.ParseFloat(m[1], 64)
			p, _ := strconv.ParseFloat(m[2], 64)
			s, _ := strconv.Atoi(m[3])
			if math.Abs(f-e[0]) < 0.05 && math.Abs(p-e[1]) < 0.7 && s >= 8 {
				k++
			}
		}
		if k != 1 {
			t.Errorf("emitter %v: %d lines in\n%s", e, k, adv.Text)
		}
	}
}
