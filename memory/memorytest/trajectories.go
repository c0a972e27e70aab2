package memorytest

import (
	"fmt"
	"time"

	"github.com/hippocam/hippocam"
)

// families are the kinds of task Trajectory makes: a title, the visible conditions, a decision
// with its options, the value the feedback approves, and a fact the task states.
var families = []struct {
	title, tags, key string
	options          []string
	right            string
	fact             string
}{
	{"Weekly sales report", "revenue amazon weekly", "status_filter", []string{"shipped", "all", "pending"}, "shipped", "report_owner := Dana"},
	{"Refund triage", "refunds priority", "queue", []string{"urgent", "normal"}, "urgent", "refund_limit := 200"},
	{"Shipping label check", "labels carrier", "carrier", []string{"ups", "dhl", "fedex"}, "dhl", "warehouse := Leeds"},
}

// Trajectory returns the i-th of a stream of finished tasks, from three families that take
// turns: each task states a fact, poses one decision, answers it (the right value on every
// third task of its family, another one otherwise) and ends with the feedback the stream runner
// writes (docs/sim.md, part 2). Its id is "t" and i; its key names its family.
func Trajectory(i int) hippocam.Trajectory {
	f := families[i%len(families)]
	round := i / len(families)
	chosen := f.options[(round+1)%len(f.options)]
	if round%3 == 0 {
		chosen = f.right
	}
	request := fmt.Sprintf("%s\ntags: %s\ndecide %s: %s\n%s", f.title, f.tags, f.key, join(f.options), f.fact)
	feedback := fmt.Sprintf("feedback: %s = %s wrong", f.key, chosen)
	if chosen == f.right {
		feedback = fmt.Sprintf("feedback: %s = %s right", f.key, chosen)
	}
	id := fmt.Sprintf("t%03d", i)
	task := hippocam.Task{ID: id, Key: fmt.Sprintf("family-%d", i%len(families)), Attempt: 1, Messages: []hippocam.Message{
		{Role: hippocam.RoleSystem, Content: "You are an operations assistant. Answer each decision on a line of its own."},
		{Role: hippocam.RoleUser, Content: request},
	}}
	answer := fmt.Sprintf("%s = %s", f.key, chosen)
	return hippocam.Trajectory{
		ID:   id,
		Task: task,
		Messages: []hippocam.Message{
			{ID: "m1", Role: hippocam.RoleSystem, Kind: hippocam.KindRaw, Content: task.Messages[0].Content},
			{ID: "m2", Role: hippocam.RoleUser, Kind: hippocam.KindAdvisory, Content: "(what the task was shown from its cluster)"},
			{ID: "m3", Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: request},
			{ID: "m4", Role: hippocam.RoleAssistant, Kind: hippocam.KindRaw, Content: answer},
			{ID: "m5", Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: feedback},
		},
		Feedback: feedback,
		EndedAt:  time.Date(2025, 1, 1, 0, 0, i, 0, time.UTC),
	}
}

// TaskOf returns the task of Trajectory(i), as it is visible when it starts.
func TaskOf(i int) *hippocam.Task {
	t := Trajectory(i).Task
	return &t
}

func join(options []string) string {
	s := ""
	for i, o := range options {
		if i > 0 {
			s += " | "
		}
		s += o
	}
	return s
}
