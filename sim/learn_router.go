package sim

import (
	"encoding/json"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/hippocamsys"
	"github.com/hippocam/hippocam/memory/icl"
)

// The simulated router (docs/sim.md, "Part 2: tasks, advice and routing"). It reads the JSON
// input at the end of learn.Route's instruction and answers a learn.RouterAnswer:
//
//   - a `#route SYSTEM | SCOPE` line in the task, SYSTEM offered: reuse the cluster of SYSTEM
//     whose description is SCOPE (ignoring case and surrounding spaces), else create one;
//   - otherwise reuse the cluster, of any system, described by the task's title, else create one
//     described by it: with the numeric system of the task's first numeric request whose system
//     is offered (part 3: regression for estimate, hazard for estimate-curve, entities for
//     estimate-entities); failing that, with the first offered of: icl if the task holds a
//     detail; hippocam if it holds a decision, an !ask or a fact; icl; the first system offered.

// untitled describes the cluster of a task whose message has no title line.
const untitled = "untitled task"

// router answers a router request.
func router(r *request) (answer, error) {
	n := len(r.msgs)
	if n == 0 || r.msgs[n-1].Role != hippocam.RoleUser {
		return answer{}, hippocam.Errorf(hippocam.EINVALID, "a router request must end with the instruction as a user message")
	}
	_, body, ok := strings.Cut(r.msgs[n-1].Content, learn.RouterInputMarker)
	if !ok {
		return answer{}, hippocam.Errorf(hippocam.EINVALID, "router request: no line %q before the input", learn.RouterInputMarker)
	}
	var in learn.RouterInput // the first JSON value after the marker: a repair request goes on after it
	if err := json.NewDecoder(strings.NewReader(body)).Decode(&in); err != nil {
		return answer{}, hippocam.Errorf(hippocam.EINVALID, "router request: the input is not valid JSON: %v", err)
	}
	return contractAnswer(r, string(hippocam.CallRouter), routeTask(&in))
}

// taskFeatures is what the router's rules look at in a task's user messages.
type taskFeatures struct {
	title        string
	route        [2]string // the first #route naming an offered system
	detail, kept bool      // a detail line; a decision, an !ask or a fact
	numeric      []string  // the systems of the numeric requests, in order
}

// readTask reads the features of a task's user messages; offered reports whether a system is
// offered. The title comes from the first user message.
func readTask(task *learn.RouterTask, offered func(string) bool) taskFeatures {
	var f taskFeatures
	first := true
	for _, m := range task.Messages {
		if m.Role != string(hippocam.RoleUser) {
			continue
		}
		for _, l := range readLines(m.Content) {
			switch l.kind {
			case kindRoute:
				if f.route[0] == "" && offered(l.route[0]) {
					f.route = l.route
				}
			case kindDetail:
				f.detail = true
			case kindDecide, kindAsk, kindFact:
				f.kept = true
			}
			if q, ok := readNumericRequest(l.body); ok && l.kind == kindDecide {
				f.numeric = append(f.numeric, q.systemFor())
			}
			if first && f.title == "" && titleLine(&l) {
				f.title = l.body
			}
		}
		first = false
	}
	if f.title == "" {
		f.title = untitled
	}
	return f
}

// titleLine reports whether l may be a task's title: none of a directive, a tags line, a
// decision, a fact, a detail or an impression, and not blank.
func titleLine(l *line) bool {
	switch l.kind {
	case kindTags, kindDecide, kindFact, kindDetail, kindImpression:
		return false
	}
	return l.body != "" && l.body[0] != '#' && l.body[0] != '!'
}

// routeTask applies the router's rules to its input.
func routeTask(in *learn.RouterInput) learn.RouterAnswer {
	offered := func(id string) bool {
		for _, s := range in.Systems {
			if s.ID == id {
				return true
			}
		}
		return false
	}
	f := readTask(&in.Task, offered)
	if system, scope := f.route[0], f.route[1]; system != "" {
		for _, c := range in.Clusters {
			if c.System == system && strings.EqualFold(strings.TrimSpace(c.Description), scope) {
				return learn.RouterAnswer{Action: learn.ActionReuse, Cluster: c.ID, Reason: "I followed the task's routing directive to the cluster with that scope."}
			}
		}
		return learn.RouterAnswer{Action: learn.ActionCreate, System: system, Scope: scope, Reason: "I followed the task's routing directive; no cluster had that scope yet."}
	}
	for _, c := range in.Clusters {
		if strings.TrimSpace(c.Description) == f.title {
			return learn.RouterAnswer{Action: learn.ActionReuse, Cluster: c.ID, Reason: "I found a cluster described by the task's title."}
		}
	}
	var prefer []string
	prefer = append(prefer, f.numeric...)
	if f.detail {
		prefer = append(prefer, icl.Name)
	}
	if f.kept {
		prefer = append(prefer, hippocamsys.Name)
	}
	prefer = append(prefer, icl.Name)
	system := ""
	for _, p := range prefer {
		if offered(p) {
			system = p
			break
		}
	}
	if system == "" && len(in.Systems) > 0 {
		system = in.Systems[0].ID
	}
	return learn.RouterAnswer{Action: learn.ActionCreate, System: system, Scope: f.title, Reason: "I found no cluster for the task's title, so I opened one."}
}
