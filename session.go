package hippocam

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"
)

// Session is the state Hippocam keeps for one agent conversation: the context C, the intent
// stack I and the bookkeeping the algorithms need. The archive A lives in the Store and is read
// through Store.Children.
type Session struct {
	Tenant string `json:"tenant"`
	ID     string `json:"id"`
	// UID is the session's creation identity, set by Store.CreateSession: a session deleted and
	// created again under the same id gets another, and a Store refuses a commit whose snapshot
	// carries a UID that is not the stored session's (docs/storage.md).
	UID string `json:"-"`
	// Context is C: the messages the main model sees, in order. It is the tree's first layer.
	Context []Message `json:"context"`
	// Stack is the intent stack I.
	Stack IntentStack `json:"stack"`
	// StackLog records how the stack changed, step by step, for the viewer.
	StackLog []StackEvent `json:"stack_log,omitempty"`
	// Rounds holds the token sizes of the most recent completed interaction rounds (a main-model
	// answer plus the results of the agent's own tools), at most MaxRounds of them.
	Rounds []int `json:"rounds,omitempty"`
	// Usage is what the session's model calls consumed, by call role.
	Usage Usage `json:"usage"`
	// Consolidations counts committed intent and prefix consolidations.
	Consolidations Consolidations `json:"consolidations"`
	// Transcript fingerprints the conversation as the agent sees it (see Transcript).
	Transcript Transcript `json:"transcript"`
	// Pending is the consolidation the last steps left for after their answers (jobs.go); nil
	// when there is none.
	Pending *Pending `json:"pending,omitempty"`
	// Seq is the last number used for a message id or a ref in this session.
	Seq int64 `json:"seq"`
	// Version increases with every committed change; a commit names the version it started from.
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// room is the spare capacity after Context, which one copy of this state may claim to
	// append in place (ClaimContext); nil when there is none to give.
	room *contextRoom
}

// contextRoom is the spare capacity of one context state: ctx is that context (its backing
// array and length) with its whole capacity. The first copy of the state to claim it owns
// ctx[len(ctx):cap(ctx)]; kept is what the engine built over the context for its next step.
type contextRoom struct {
	ctx   []Message
	kept  any
	taken atomic.Bool
}

// MaxRounds bounds Session.Rounds: the quantile is taken over this many recent rounds.
const MaxRounds = 256

// MaxStackLog bounds Session.StackLog to its most recent events.
const MaxStackLog = 200

// StackEvent records one applied JANUS answer.
type StackEvent struct {
	Step     int64    `json:"step"`
	Closed   []string `json:"closed,omitempty"`
	Opened   []string `json:"opened,omitempty"`
	Guidance string   `json:"guidance,omitempty"`
}

// Consolidations counts committed consolidations by kind.
type Consolidations struct {
	Intent int `json:"intent"`
	Prefix int `json:"prefix"`
}

// NextID allocates a fresh session-scoped identifier with the given prefix ("m" for messages,
// "r" for archive refs). Ids are deterministic, so that identical runs send identical requests.
func (s *Session) NextID(prefix string) string {
	s.Seq++
	return prefix + strconv.FormatInt(s.Seq, 10)
}

// Index returns the position in the context of the message with the given id, or -1.
func (s *Session) Index(id string) int {
	for i := range s.Context {
		if s.Context[i].ID == id {
			return i
		}
	}
	return -1
}

// AddRound records the size of a completed interaction round.
func (s *Session) AddRound(tokens int) {
	s.Rounds = append(s.Rounds, tokens)
	if n := len(s.Rounds); n > MaxRounds {
		s.Rounds = append([]int(nil), s.Rounds[n-MaxRounds:]...)
	}
}

// Clone returns a deep enough copy of s for an engine step to work on: slices the step may
// modify are copied, messages themselves are immutable and shared. The context is shared too,
// copy on write: the clone's slice has no room beyond its length, so that its first append
// copies it (a session of 10,000 messages is not copied three times per request), unless the
// clone claims the room after it (ClaimContext). Code that changes a context must therefore
// append to it or build a new slice, never assign to the elements it started with.
func (s *Session) Clone() *Session {
	c := *s
	c.Context = slices.Clip(s.Context)
	c.Stack = append(IntentStack(nil), s.Stack...)
	c.StackLog = append([]StackEvent(nil), s.StackLog...)
	c.Rounds = append([]int(nil), s.Rounds...)
	c.Usage = s.Usage.Clone()
	c.Transcript.Framing = append([]Message(nil), s.Transcript.Framing...)
	c.Pending = s.Pending.Clone()
	if l := s.Transcript.Learning; l != nil {
		cl := *l
		c.Transcript.Learning = &cl
	}
	if cl := s.Transcript.Client; cl != nil {
		cc := *cl
		c.Transcript.Client = &cc
	}
	if r := s.Transcript.Request; r != nil {
		cr := *r
		c.Transcript.Request = &cr
	}
	return &c
}

// ClaimContext gives s.Context back the spare capacity its state was kept with (KeepContext), when
// s is the first copy of that state to claim it (ok), and returns what was kept with it; s may then
// append to its context in place, and no other copy of the state will. Otherwise (another copy
// claimed it, or s.Context is no longer that state) s is left as it is and kept is nil. Either
// way, appending never writes over a message another copy can see: a step claims the room of
// the context it continues, so that its appends do not copy the whole context first.
func (s *Session) ClaimContext() (kept any, ok bool) {
	r := s.room
	if r == nil || len(s.Context) != len(r.ctx) || unsafe.SliceData(s.Context) != unsafe.SliceData(r.ctx) ||
		!r.taken.CompareAndSwap(false, true) {
		return nil, false
	}
	s.Context = r.ctx
	return r.kept, true
}

// KeepContext makes s.Context's spare capacity, and kept, the next claim of s's state
// (ClaimContext), and clips s.Context so that s and its clones append by copying. Only the owner
// of the capacity may call it: the copy that claimed it, or made the context's backing array.
func (s *Session) KeepContext(kept any) {
	s.room = &contextRoom{ctx: s.Context, kept: kept}
	s.Context = slices.Clip(s.Context)
}

// SessionInfo is a session's summary in a listing.
type SessionInfo struct {
	Tenant         string         `json:"tenant"`
	ID             string         `json:"id"`
	Messages       int            `json:"messages"`
	Depth          int            `json:"depth"`
	Consolidations Consolidations `json:"consolidations"`
	UpdatedAt      time.Time      `json:"updated_at"`
	// Fork is the session's origin when it is a fork.
	Fork *Fork `json:"fork,omitempty"`
	// Client is the session's title and client conversation (Transcript.Client), nil when
	// unknown.
	Client *Client `json:"client,omitempty"`
}

// Change is one step's state change, committed atomically by a Store. Ops are applied in order
// to the context the store holds at version From; the session's other fields are taken from the
// snapshot passed beside the Change.
type Change struct {
	From int64 `json:"from"`
	Ops  []Op  `json:"ops"`
	// Jobs are enqueued in the commit's transaction (JobQueue); only Kind and Payload are read.
	Jobs []Job `json:"jobs,omitempty"`
}

// Op is one context operation: an append, or a REPLACE (Alg. 1) of the span of context messages
// with the given ids by Memory, whose Ref becomes the archive node holding the span in order.
type Op struct {
	Append *Message `json:"append,omitempty"`
	Span   []string `json:"span,omitempty"`
	Memory *Message `json:"memory,omitempty"`
}

// AppendOp returns an Op that appends m to the context.
func AppendOp(m Message) Op { return Op{Append: &m} }

// ReplaceOp returns an Op that moves the span under memory.Ref and puts memory in its place.
func ReplaceOp(span []string, memory Message) Op { return Op{Span: span, Memory: &memory} }

// Transcript fingerprints the conversation as the agent sees it: the messages it sent and the
// answers it received, in order (not guidance, memories or recall exchanges). A proxy uses it to
// check that a history the agent resends extends what the session has seen, without reading the
// archive: Hash chains TranscriptHash over the Count messages seen so far.
type Transcript struct {
	Count int    `json:"count"`
	Hash  string `json:"hash"`
	// PrevCount and PrevHash describe the transcript just before the last answer: a client that
	// retries a request whose answer it never received resends exactly that history.
	PrevCount int    `json:"prev_count"`
	PrevHash  string `json:"prev_hash"`
	// Answer is the id of the last answer, to send again to such a client, and RequestKey the
	// idempotency key of the request it answered (when the client sent one).
	Answer     string `json:"answer,omitempty"`
	RequestKey string `json:"request_key,omitempty"`
	// Framing is the current version of the session's framing: the agent's leading system and
	// developer messages, which are not transcript (a change makes a new version, never a fork).
	// FramingHash fingerprints it (FramingHash); every version is kept in the archive, beneath
	// the KindFraming message that marks where it took effect.
	Framing     []Message `json:"framing,omitempty"`
	FramingHash string    `json:"framing_hash,omitempty"`
	// Fork says where the session came from, when it is a fork of another.
	Fork *Fork `json:"fork,omitempty"`
	// JanusCovered is the id of the last context message that the last JANUS call to answer
	// covered (the engine's, not the agent's: it rides in this snapshot field so that every
	// store keeps it without a column of its own). The next JANUS call reviews the messages
	// after it, so a call that failed loses no directive. Empty: nothing reviewed yet.
	JanusCovered string `json:"janus_covered,omitempty"`
	// Learning is the session as a task of the learning layer (docs/learning.md): how it was
	// routed, what advisory it got, and whether it has ended. It rides in this snapshot field
	// too. Nil: learning was off for it.
	Learning *TaskLearning `json:"learning,omitempty"`
	// Client is the session's title and what its client said of the conversation it belongs to
	// (client.go); the stores also keep it where a listing reads it (SessionInfo.Client). Nil for
	// a session that has not answered yet.
	Client *Client `json:"client,omitempty"`
	// Request is the size, part by part, of the last main-model request the session's last step
	// sent (the one its answer came from): what the viewer's context meter shows. Nil before
	// the first step.
	Request *RequestSize `json:"request,omitempty"`
}

// TaskLearning is what the learning layer recorded on a session.
type TaskLearning struct {
	// Key groups the attempts of one problem (the Hippocam-Task header); empty: the session id.
	Key string `json:"key,omitempty"`
	// Cluster is the cluster the task was routed to ("" when it ran stateless), System its
	// memory system, and Decision how it was chosen: "pinned", "global", "match" (the task's text
	// named one cluster's scope: no router call), "reuse" or "create" (the router's), "pending"
	// (DecisionPending: not decided yet) or "stateless" (nothing to route to, or the router kept
	// failing). Reason says why, in the router's words where it decided.
	Cluster  string `json:"cluster,omitempty"`
	System   string `json:"system,omitempty"`
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	// RouteFailures counts the routings of the task that failed (a model or store error, or
	// answers that kept breaking the router's contract); a task routed again after each one
	// stops trying at a bound and runs stateless.
	RouteFailures int `json:"route_failures,omitempty"`
	// Advisory is the text read out of the cluster for the task, and AdvisoryTokens its size.
	Advisory       string `json:"advisory,omitempty"`
	AdvisoryTokens int    `json:"advisory_tokens,omitempty"`
	// Ended is set by the task's outcome; Feedback is its text, and Success and Reward what the
	// client reported (kept for measurement, never shown to a learning component).
	Ended    bool      `json:"ended,omitempty"`
	EndedAt  time.Time `json:"ended_at,omitzero"`
	Feedback string    `json:"feedback,omitempty"`
	Success  *bool     `json:"success,omitempty"`
	Reward   *float64  `json:"reward,omitempty"`
	// Attempts is how many attempts of Key the client said there are (lessons learn from all of
	// them at once); 0: one.
	Attempts int `json:"attempts,omitempty"`
}

// DecisionPending is the Decision of a task whose routing is still owed: the router had not
// decided when the task's first answer went out, or it failed. The proxy routes such a task at
// its next request, or at its outcome at the latest, so that what it teaches reaches a cluster.
const DecisionPending = "pending"

// Pending reports whether the task's routing is still owed (DecisionPending).
func (l *TaskLearning) Pending() bool { return l != nil && l.Decision == DecisionPending }

// Fork records the origin of a session that continues a diverging history: the session it
// diverged from and how many transcript messages the two have in common.
type Fork struct {
	From string `json:"from"`
	At   int    `json:"at"`
}

// FramingHash fingerprints a framing: the roles, texts and parts of its messages.
func FramingHash(framing []Message) string {
	chain := TranscriptChain("", framing)
	return chain[len(chain)-1]
}

// TranscriptHash extends the chained hash prev by one message, over what the agent can resend
// unchanged: role, text, non-text parts, tool calls and the tool-call id. Tool-call arguments
// count as JSON values (CanonicalJSON), so a client that re-serializes them continues the same
// transcript.
func TranscriptHash(prev string, m *Message) string {
	return hex.EncodeToString(transcriptSum(nil, []byte(prev), m))
}

// TranscriptChain returns TranscriptHash chained over msgs from prev: element 0 is prev and
// element i the hash after msgs[:i]. The hashes share one allocation.
func TranscriptChain(prev string, msgs []Message) []string {
	chain := make([]string, len(msgs)+1)
	chain[0] = prev
	if len(msgs) == 0 {
		return chain
	}
	const size = 2 * transcriptSumSize
	hexes := make([]byte, 0, len(msgs)*size)
	last := []byte(prev)
	var buf []byte
	for i := range msgs {
		buf = appendTranscriptFields(buf[:0], last, &msgs[i])
		sum := sha256.Sum256(buf)
		hexes = hex.AppendEncode(hexes, sum[:transcriptSumSize])
		last = hexes[len(hexes)-size:]
	}
	all := string(hexes)
	for i := range msgs {
		chain[i+1] = all[i*size : (i+1)*size]
	}
	return chain
}

// transcriptSumSize is how many bytes of the SHA-256 sum a transcript hash keeps (in hex, twice
// as many characters).
const transcriptSumSize = 16

// transcriptSum appends the sum TranscriptHash encodes to dst.
func transcriptSum(dst, prev []byte, m *Message) []byte {
	sum := sha256.Sum256(appendTranscriptFields(nil, prev, m))
	return append(dst, sum[:transcriptSumSize]...)
}

// appendTranscriptFields appends what TranscriptHash hashes, each field as appendField writes it.
func appendTranscriptFields(b, prev []byte, m *Message) []byte {
	b = appendField(b, prev)
	b = appendField(b, m.Role)
	b = appendField(b, m.Content)
	b = appendField(b, m.ToolCallID)
	for _, c := range m.ToolCalls {
		b = appendField(b, c.ID)
		b = appendField(b, c.Name)
		b = appendField(b, CanonicalJSON(c.Arguments))
	}
	for _, p := range m.Parts {
		b = appendField(b, p.Type)
		b = appendField(b, p.MediaType)
		b = appendField(b, p.Data)
		b = appendField(b, p.URL)
		b = appendField(b, p.FileID)
	}
	return b
}

// appendField appends one hashed field: its length (8 bytes, big-endian), then its bytes.
func appendField[S ~string | ~[]byte](b []byte, s S) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}
