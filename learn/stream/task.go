// Package stream plays a stream of tasks through the learning layer (docs/learning.md): it
// reads the JSON Lines of docs/sim.md part 2, runs every task under one condition (no memory, a
// retry baseline, one global cluster, routed clusters over a library of memory systems, lessons
// from several attempts, or clusters given by the hidden sources), scores each answer against
// the task's hidden environment, writes the feedback that ends the task, updates the cluster,
// and reports reward, cost by role, memory size and routing.
package stream

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/hippocam/hippocam"
)

// Task is one line of a stream: a task's id, its hidden source, its messages (the framing and
// the user's side of the conversation, in order) and its hidden environment. Source and Env are
// seen by the runner only.
type Task struct {
	ID       string             `json:"id"`
	Source   string             `json:"source"`
	Messages []hippocam.Message `json:"messages"`
	Env      Env                `json:"env"`
}

// Env is what scores a task and writes its feedback: per decision key the right values and the
// reference one, per question key the true value.
type Env struct {
	Decide map[string]Decision `json:"decide,omitempty"`
	Ask    map[string]string   `json:"ask,omitempty"`
}

// Decision is the hidden side of one `decide KEY: …` line: the values that are right (more than
// one makes a lucky instance) and the reference among them (Right[0] when not given).
type Decision struct {
	Right     []string `json:"right"`
	Reference string   `json:"reference,omitempty"`
}

// Items counts what the task scores: its decisions and questions.
func (t *Task) Items() int { return len(t.Env.Decide) + len(t.Env.Ask) }

// maxLine bounds one line of a stream, in bytes.
const maxLine = 16 << 20

// Read reads a stream: one task per line, blank lines skipped. A line that is not a task (not
// JSON, no id or an id seen before, no user message, a message role other than system, user or
// tool, a decision with no right value or a reference that is not among them) is an EINVALID
// error naming the line.
func Read(r io.Reader) ([]Task, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var tasks []Task
	seen := map[string]int{}
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var t Task
		if err := json.Unmarshal([]byte(text), &t); err != nil {
			return nil, hippocam.Errorf(hippocam.EINVALID, "stream line %d: %v", n, err)
		}
		if err := t.check(); err != nil {
			return nil, hippocam.Errorf(hippocam.EINVALID, "stream line %d: %v", n, err)
		}
		if first, dup := seen[t.ID]; dup {
			return nil, hippocam.Errorf(hippocam.EINVALID, "stream line %d: task id %q was already used on line %d", n, t.ID, first)
		}
		seen[t.ID] = n
		tasks = append(tasks, t)
	}
	if err := sc.Err(); err != nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "stream: %v", err)
	}
	return tasks, nil
}

// check validates one task and fills in what has a default (message kinds, references).
func (t *Task) check() error {
	if strings.TrimSpace(t.ID) == "" {
		return fmt.Errorf("the task has no id")
	}
	users := 0
	for i := range t.Messages {
		m := &t.Messages[i]
		switch m.Role {
		case hippocam.RoleUser:
			users++
		case hippocam.RoleSystem:
			if i > 0 && t.Messages[i-1].Role != hippocam.RoleSystem {
				return fmt.Errorf("message %d: system messages come first, before the conversation", i+1)
			}
		case hippocam.RoleTool:
		default:
			return fmt.Errorf("message %d: role %q; a task's messages are system, user or tool", i+1, m.Role)
		}
		if m.Kind == "" {
			m.Kind = hippocam.KindRaw
		}
		if m.Kind != hippocam.KindRaw || m.ID != "" || m.Ref != "" {
			return fmt.Errorf("message %d: only role and content belong in a task's message", i+1)
		}
	}
	if users == 0 {
		return fmt.Errorf("task %q has no user message", t.ID)
	}
	for key, d := range t.Env.Decide {
		if len(d.Right) == 0 {
			return fmt.Errorf("decision %q has no right value", key)
		}
		if d.Reference == "" {
			d.Reference = d.Right[0]
			t.Env.Decide[key] = d
		} else if !contains(d.Right, d.Reference) {
			return fmt.Errorf("decision %q: the reference %q is not among the right values", key, d.Reference)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
