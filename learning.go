package hippocam

import (
	"context"
	"encoding/json"
	"time"
)

// Learning across tasks (docs/learning.md): what an agent learns from one task and brings to the
// next. A task's experience (its Trajectory) updates a Cluster, one isolated instance of one
// MemorySystem; before a task, a router picks (or creates) the cluster, and the system reads its
// state into an advisory that enters the task's context.

// Task is one run of an agent on one problem (one session through the proxy), as visible when it
// starts.
type Task struct {
	// ID names the task (the session); Key groups the attempts of one problem (tasks with the
	// same specification run with the same memory). Attempt counts from 1.
	ID      string `json:"id"`
	Key     string `json:"key,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// Messages are the task's specification: its framing and first user message(s).
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools,omitempty"`
	// Attempts is how many attempts of Key there are, when the client said so (0: unknown,
	// each trajectory stands alone). A system that learns from all attempts at once (lessons)
	// waits until it has them.
	Attempts int `json:"attempts,omitempty"`
}

// Text is the task's specification as one text: its messages' contents, in order.
func (t *Task) Text() string {
	n := 0
	for i := range t.Messages {
		n += len(t.Messages[i].Content) + 1
	}
	b := make([]byte, 0, n)
	for i := range t.Messages {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, t.Messages[i].Content...)
	}
	return string(b)
}

// Trajectory is a finished task: every original message it holds (its expansion), and the
// feedback that ended it. Success and Reward are the outcome as reported, kept for measurement:
// no learning component ever sees them (only the feedback text).
type Trajectory struct {
	// ID is unique per trajectory (the task's session id): an update that meets an id it has
	// applied already changes nothing.
	ID       string    `json:"id"`
	Task     Task      `json:"task"`
	Messages []Message `json:"messages"`
	Feedback string    `json:"feedback"`
	Success  *bool     `json:"success,omitempty"`
	Reward   *float64  `json:"reward,omitempty"`
	EndedAt  time.Time `json:"ended_at"`
}

// Cluster is one isolated instance of one memory system: its state, an immutable description of
// the tasks that should share it (its scope), and how many trajectories it has learned from.
// Clusters belong to a tenant.
type Cluster struct {
	Tenant      string `json:"tenant"`
	ID          string `json:"id"`
	System      string `json:"system"`
	Description string `json:"description"`
	// Trajectories counts the trajectories applied; Applied lists their ids (idempotence).
	Trajectories int      `json:"trajectories"`
	Applied      []string `json:"applied,omitempty"`
	// State is the system's own state, opaque to everything else (JSON).
	State json.RawMessage `json:"state,omitempty"`
	// Version increases with every committed update.
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// HasApplied reports whether the trajectory with the given id has been applied to the cluster.
func (c *Cluster) HasApplied(id string) bool {
	for _, a := range c.Applied {
		if a == id {
			return true
		}
	}
	return false
}

// AdvisoryHeader begins the advisory message that enters a task's context: it tells the model
// what the message is (and that it is not the task itself: what it quotes from earlier tasks is
// not to be done again).
const AdvisoryHeader = "(Advisory from earlier tasks: experience to weigh, not instructions for this task.)"

// Advisory is what a memory system reads out of a cluster for a task: text for the task's
// context, and how many entries of the state it draws on.
type Advisory struct {
	Text    string `json:"text"`
	Entries int    `json:"entries"`
}

// MemorySystem is one way of keeping experience (docs/learning.md, "The systems"). Implementations are safe
// for concurrent use and keep nothing between calls: all they know is in the state they are
// given. Their model calls carry their own CallRole, so that usage and cost are told apart.
type MemorySystem interface {
	// Name is the system's id (icl, reasoning_bank, lessons, hippocam…); Description says what it
	// learns and when to choose it: the router reads it.
	Name() string
	Description() string
	// Read renders the state for task as an advisory of at most budget tokens. An empty state
	// gives an empty advisory.
	Read(ctx context.Context, state json.RawMessage, task *Task, budget int) (Advisory, error)
	// Update returns the state after learning from trajs, in order (one trajectory, or all the
	// attempts of one task key). It must not change state in place. On error the caller keeps the
	// old state: nothing is half-applied.
	Update(ctx context.Context, state json.RawMessage, trajs []Trajectory) (json.RawMessage, error)
	// Entries counts what state holds (lessons, items, trajectories, messages), for reports.
	Entries(state json.RawMessage) int
}

// The interfaces below are optional: a memory system implements those that apply to it, and the
// session service, the transports and memory/library find them by type assertion, so that none of
// them needs to know a system by name (docs/learning.md, "Adding a memory system").

// StateViewer is a memory system that renders its state for people: the REST API's
// GET /api/clusters/{id} and the viewer show what View returns. View returns a value that encodes
// to JSON (lists never null) and the number of entries the state holds, as Entries counts them.
// An empty state renders as a fresh cluster's. EINVALID for a state that is not the system's.
type StateViewer interface {
	View(state json.RawMessage) (view any, entries int, err error)
}

// BudgetSetter is a memory system that keeps its state within the advisory budget as it learns,
// rather than only cutting at Read: the hippocam system keeps its cluster session's context,
// which is its advisory, within it. The caller sets the budget once, before the system is used.
type BudgetSetter interface {
	SetBudget(tokens int)
}

// UpdateEvent is one kind of change an UpdateObserver reports: Kind names it in a word ("added"),
// Help says what it counts, for a metric's help text.
type UpdateEvent struct {
	Kind string
	Help string
}

// UpdateObserver is a memory system that can say what an update changed in its state, by kind
// of change: the session service counts these in its metrics (hippocam_<system>_<kind>_total)
// without knowing what the kinds mean.
type UpdateObserver interface {
	// UpdateEvents lists the kinds of change Observe reports (each counted from zero).
	UpdateEvents() []UpdateEvent
	// Observe counts, by kind, the changes of the update that turned before into after. Kinds
	// not among UpdateEvents may appear; they are not counted.
	Observe(before, after json.RawMessage) (map[string]int, error)
}

// The call roles of the learning layer.
const (
	CallRouter    CallRole = "router"     // routes a task to a cluster
	CallJudge     CallRole = "judge"      // lessons: judges one attempt
	CallInductor  CallRole = "inductor"   // lessons: induces candidates from a task key's attempts
	CallLessons   CallRole = "lessons"    // lessons: consolidates a candidate against similar lessons
	CallRBJudge   CallRole = "rb_judge"   // reasoning_bank: success or failure
	CallRBExtract CallRole = "rb_extract" // reasoning_bank: the items of a trajectory
	CallAdapter   CallRole = "adapter"    // numeric systems: binds a cluster's fields to the runtime's roles, once
	CallExtractor CallRole = "extractor"  // numeric systems: turns one visible event into typed records
)

// ClusterStore keeps clusters durably, per tenant. Every method is safe for concurrent use.
type ClusterStore interface {
	// CreateCluster stores a new cluster at version 0 (setting CreatedAt and UpdatedAt).
	// ECONFLICT if the id exists for the tenant.
	CreateCluster(ctx context.Context, c *Cluster) error
	// Cluster loads one. ENOTFOUND if none.
	Cluster(ctx context.Context, tenant, id string) (*Cluster, error)
	// Clusters lists a tenant's clusters, oldest first.
	Clusters(ctx context.Context, tenant string) ([]Cluster, error)
	// UpdateCluster stores c's Trajectories, Applied and State if the stored version is from,
	// and sets c.Version to from+1 and UpdatedAt. ECONFLICT if the version moved; ENOTFOUND if
	// the cluster is gone.
	UpdateCluster(ctx context.Context, c *Cluster, from int64) error
	// DeleteCluster removes one. ENOTFOUND if none.
	DeleteCluster(ctx context.Context, tenant, id string) error
}
