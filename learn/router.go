package learn

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hippocam/hippocam"
)

// The router (docs/learning.md, the Routed Continual Learning paper §4.1): one contract call before a task that sends it
// to an existing cluster or creates one, with a memory system and a scope. It sees only the
// task's specification, the offered systems' ids and descriptions and, per cluster, its id,
// system, description and trajectory count: never a cluster's state, the task's id or key, or
// anything learned from earlier routing.

//go:embed prompts/router.txt
var routerPrompt string

// RouterInputMarker introduces the JSON object (a RouterInput) at the end of the router's
// instruction.
const RouterInputMarker = "Routing input, as JSON:"

// The router's actions.
const (
	ActionReuse  = "reuse"
	ActionCreate = "create"
)

// RouterInput is everything the router is shown, as its instruction carries it. The fields go
// from the most stable to the least (the offered systems, the tenant's clusters, the task), so
// that consecutive routings share the longest prefix a provider can cache.
type RouterInput struct {
	Systems  []RouterSystem  `json:"systems"`
	Clusters []RouterCluster `json:"clusters"`
	Task     RouterTask      `json:"task"`
}

// RouterTask is a task's specification: its messages in order and the tools it offers.
type RouterTask struct {
	Messages []RouterMessage `json:"messages"`
	Tools    []RouterTool    `json:"tools,omitempty"`
}

// RouterMessage is one message of a task's specification.
type RouterMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// RouterTool is one tool of a task's specification, without its parameters.
type RouterTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// RouterSystem is one memory system a new cluster may use.
type RouterSystem struct {
	ID          string `json:"id"`
	Description string `json:"description"`
}

// RouterCluster is what the router knows of an existing cluster.
type RouterCluster struct {
	ID           string `json:"id"`
	System       string `json:"system"`
	Description  string `json:"description"`
	Trajectories int    `json:"trajectories"`
}

// RouterAnswer is the router's answer: ActionReuse with Cluster, or ActionCreate with System and
// Scope.
type RouterAnswer struct {
	Action  string `json:"action"`
	Cluster string `json:"cluster,omitempty"`
	System  string `json:"system,omitempty"`
	Scope   string `json:"scope,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

var routerSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"action":{"type":"string","enum":["reuse","create"],"description":"reuse: keep using a cluster that exists; create: start a new one"},` +
	`"cluster":{"type":["string","null"],"description":"for reuse: the id of the existing cluster"},` +
	`"system":{"type":["string","null"],"description":"for create: the id of one of the offered memory systems"},` +
	`"scope":{"type":["string","null"],"description":"for create: which future tasks should share the new cluster"},` +
	`"reason":{"type":"string","description":"one sentence on why"}},` +
	`"required":["action","reason"],"additionalProperties":false}`)

// Validate checks the answer against what the router was offered: a reused cluster must exist;
// a created one must name an offered system and a scope. Nothing else is checked.
func (a *RouterAnswer) Validate(in *RouterInput) error {
	switch a.Action {
	case ActionReuse:
		if strings.TrimSpace(a.Cluster) == "" {
			return fmt.Errorf(`action "reuse" needs the id of an existing cluster in "cluster"`)
		}
		if !slices.ContainsFunc(in.Clusters, func(c RouterCluster) bool { return c.ID == a.Cluster }) {
			return fmt.Errorf("there is no cluster %q; reuse one of: %s, or create a new one", a.Cluster, clusterIDs(in.Clusters))
		}
	case ActionCreate:
		if !slices.ContainsFunc(in.Systems, func(s RouterSystem) bool { return s.ID == a.System }) {
			return fmt.Errorf("system %q is not offered; choose one of: %s", a.System, systemIDs(in.Systems))
		}
		if strings.TrimSpace(a.Scope) == "" {
			return fmt.Errorf(`action "create" needs a scope: which future tasks should share the new cluster`)
		}
	default:
		return fmt.Errorf(`action is %q; use "reuse" or "create"`, a.Action)
	}
	return nil
}

func clusterIDs(cs []RouterCluster) string {
	if len(cs) == 0 {
		return "(there are none)"
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return strings.Join(ids, ", ")
}

func systemIDs(ss []RouterSystem) string {
	if len(ss) == 0 {
		return "(none is offered)"
	}
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	return strings.Join(ids, ", ")
}

// Decision is where the router sends a task: an existing cluster (Cluster), or a new one with
// System and Scope. Reason is the router's own explanation.
type Decision struct {
	Cluster       string
	System, Scope string
	Reason        string
}

// NewRouterInput builds what the router is shown for task.
func NewRouterInput(task *hippocam.Task, systems []hippocam.MemorySystem, clusters []hippocam.Cluster) *RouterInput {
	in := &RouterInput{Systems: []RouterSystem{}, Clusters: []RouterCluster{}, Task: RouterTask{Messages: []RouterMessage{}}}
	for _, m := range task.Messages {
		in.Task.Messages = append(in.Task.Messages, RouterMessage{Role: string(m.Role), Content: m.Content})
	}
	for _, t := range task.Tools {
		in.Task.Tools = append(in.Task.Tools, RouterTool{Name: t.Name, Description: t.Description})
	}
	for _, s := range systems {
		in.Systems = append(in.Systems, RouterSystem{ID: s.Name(), Description: s.Description()})
	}
	for _, c := range clusters {
		in.Clusters = append(in.Clusters, RouterCluster{ID: c.ID, System: c.System, Description: c.Description, Trajectories: c.Trajectories})
	}
	return in
}

// routerInstruction is the router's user message: a short request and the input as JSON.
func routerInstruction(in *RouterInput) (string, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return "", fmt.Errorf("router input: %w", err)
	}
	return "Route the new task: reuse the existing cluster whose scope covers it, or create a new cluster for it.\n\n" +
		RouterInputMarker + "\n" + string(b), nil
}

// Route asks the router where task goes, among the offered systems and the tenant's clusters.
// An answer that breaks the contract (RouterAnswer.Validate) is sent back with the reason, up to
// env.Corrections times; after that Route returns an error wrapping ErrGaveUp, and the caller
// runs the task stateless. EINVALID when there is nothing to choose from (no system and no
// cluster); model errors are returned as they are.
func Route(ctx context.Context, env *Env, task *hippocam.Task, systems []hippocam.MemorySystem, clusters []hippocam.Cluster) (Decision, error) {
	if len(systems) == 0 && len(clusters) == 0 {
		return Decision{}, hippocam.Errorf(hippocam.EINVALID, "route: no memory system is offered and no cluster exists")
	}
	in := NewRouterInput(task, systems, clusters)
	instruction, err := routerInstruction(in)
	if err != nil {
		return Decision{}, err
	}
	var d Decision
	err = Call(ctx, env, hippocam.CallRouter, routerPrompt, instruction, routerSchema, func(args string) error {
		var a RouterAnswer
		if err := Decode(args, &a); err != nil {
			return err
		}
		if err := a.Validate(in); err != nil {
			return err
		}
		d = Decision{Reason: strings.TrimSpace(a.Reason)}
		if a.Action == ActionReuse {
			d.Cluster = a.Cluster
		} else {
			d.System, d.Scope = a.System, strings.TrimSpace(a.Scope)
		}
		return nil
	})
	if err != nil {
		return Decision{}, fmt.Errorf("route task %s: %w", task.ID, err)
	}
	return d, nil
}
