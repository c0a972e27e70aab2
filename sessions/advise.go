package sessions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"

	"github.com/hippocam/hippocam"
)

// MaxAdviceBytes bounds the task text of an advice request.
const MaxAdviceBytes = 64 << 10

// Advise answers what a task with this text would be told if it started now, for agents that
// cannot send their model calls through the proxy (the MCP tool get_advisory). The text is routed
// as a new session's first request is (startTask: the global cluster, the one whose scope the
// text names, or the router's, read within the advisory budget), except that it waits for the
// router however long it takes, since no answer is held up; no session is created and nothing
// runs for the agent.
// It changes nothing: a cluster the router would create is not created (Decision "create", the
// system named, no advisory), and a numeric cluster waiting for its first reuse is read as it is
// (no advisory yet) rather than configured from a text that may be a probe. Like a task start it
// never fails on the router's account: a router that gives up, or a model or store error on the
// way, gives Decision "stateless" with the kind of failure. With learning off it returns nil.
// EINVALID for an empty text, one longer than MaxAdviceBytes or one that is not UTF-8.
func (s *Service) Advise(ctx context.Context, tenant, text string) (*hippocam.TaskLearning, error) {
	ctx = hippocam.WithCallSession(ctx, tenant, "") // the router's calls are the tenant's, of no one session
	switch {
	case strings.TrimSpace(text) == "":
		return nil, hippocam.Errorf(hippocam.EINVALID, "task: the text of the task is empty")
	case len(text) > MaxAdviceBytes:
		return nil, hippocam.Errorf(hippocam.EINVALID, "task: %d bytes, more than the %d a task text may hold", len(text), MaxAdviceBytes)
	case !utf8.ValidString(text):
		return nil, hippocam.Errorf(hippocam.EINVALID, "task: not valid UTF-8")
	}
	conv := &hippocam.Conversation{Messages: []hippocam.Message{{Role: hippocam.RoleUser, Kind: hippocam.KindRaw, Content: text}}}
	h := &history{Request: &Request{Tenant: tenant, Conversation: conv}, conv: conv, readOnly: true}
	sum := sha256.Sum256([]byte(text))
	// The id the router and the memory system see for the task, taken from its text: nothing
	// is stored under it.
	sess := &hippocam.Session{Tenant: tenant, ID: "advice-" + hex.EncodeToString(sum[:6])}
	return s.startTask(ctx, h, sess), nil
}
