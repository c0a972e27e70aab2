package sessions

import (
	"context"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
)

// Preview is what a request would send to the upstream model, found without running it.
type Preview struct {
	// Session is the session that would answer: a stored one, or the id a new session or fork
	// would get. Event is how the request would relate to it.
	Session string
	Event   Event
	// Fresh is set when the session does not exist yet (a new session or fork).
	Fresh bool
	// Holds is how many of the history's messages the session holds already (its transcript
	// opens with them), and Hash their transcript hash; 0 and "" for a fresh session.
	Holds int
	Hash  string
	engine.Preview
}

// Preview answers what Continue would send upstream for req as its first main-model request,
// and its size in tokens, while changing nothing: no session is created or advanced, nothing
// is stored and no model is called. The session is found by the same rules as Continue's (the
// name, else the content); a history no session holds is counted as a new session's first
// request. A transport retry or a regeneration is counted as the last request answered anew.
// Like engine.Preview it leaves out the folds a step would run for room and the consolidation
// an earlier step left pending (both only shrink the request), and a task's advisory. A history
// that ends with an assistant message is accepted: it is counted as it stands, with nothing new
// to answer, and so is one with no message at all (the framing and the tools alone, counted as
// a new session's first request, whatever the name). Errors: EINVALID as Continue's, ENOTFOUND
// for a history that continues a deleted session.
func (s *Service) Preview(ctx context.Context, req *Request) (*Preview, error) {
	h, err := s.readPreview(req)
	if err != nil {
		return nil, err
	}
	h.preview = true
	p, err := s.previewPlan(ctx, h)
	if err != nil {
		return nil, err
	}
	pv, err := s.cfg.Engine.Preview(p.sess, s.stepInput(h, p))
	if err != nil {
		return nil, err
	}
	out := &Preview{Session: p.sess.ID, Event: p.event, Fresh: p.fresh, Preview: *pv}
	if !p.fresh {
		out.Holds = p.sess.Transcript.Count
		if p.event == EventRegenerated || p.event == EventRetried {
			out.Holds = p.sess.Transcript.PrevCount // the history stops before the last answer
		}
		out.Hash = h.hashes[out.Holds]
	}
	return out, nil
}

// readPreview is read, but a conversation may end with the assistant's message.
func (s *Service) readPreview(req *Request) (*history, error) {
	conv := req.Conversation
	if conv != nil && len(conv.Messages) == 0 { // the framing and the tools alone
		if req.Name != "" {
			if err := CheckName(req.Name); err != nil {
				return nil, err
			}
		}
		return &history{Request: req, conv: conv, framing: hippocam.FramingHash(conv.Framing), hashes: []string{""}}, nil
	}
	if conv == nil || conv.Messages[len(conv.Messages)-1].Role != hippocam.RoleAssistant {
		return s.read(req)
	}
	conv = wholeExchanges(conv) // in the order read gives every request, to match the transcript
	// Checked with a stand-in last message, the rules are the same for the rest.
	probe := *conv
	probe.Messages = append(conv.Messages[:len(conv.Messages):len(conv.Messages)], hippocam.Message{Role: hippocam.RoleUser})
	if _, err := s.read(&Request{Tenant: req.Tenant, Name: req.Name, Conversation: &probe}); err != nil {
		return nil, err
	}
	h := &history{Request: req, conv: conv, framing: hippocam.FramingHash(conv.Framing), seen: len(conv.Messages)}
	h.hashes = conv.Hashes
	if len(h.hashes) != len(conv.Messages)+1 {
		h.hashes = hippocam.TranscriptChain("", conv.Messages)
	}
	return h, nil
}

// previewPlan resolves the history as Continue would; a history that is exactly a session's
// transcript (it ends with that session's last answer) stands for that session as it is.
func (s *Service) previewPlan(ctx context.Context, h *history) (*plan, error) {
	n := len(h.conv.Messages)
	if n == 0 {
		return &plan{sess: engine.NewSession(h.Tenant, "", time.Now().UTC()), event: EventCreated, fresh: true}, nil
	}
	if h.seen == n { // ends with an assistant message
		if sess, err := s.holding(ctx, h); err != nil || sess != nil {
			if err != nil {
				return nil, err
			}
			return &plan{sess: sess, event: EventContinued}, nil
		}
	}
	return s.resolve(ctx, h)
}

// holding returns the session whose transcript is exactly the history (nil when there is none):
// the named one or one of its forks, else any of the tenant's.
func (s *Service) holding(ctx context.Context, h *history) (*hippocam.Session, error) {
	n := len(h.conv.Messages)
	ids, err := s.cfg.Store.FindSessions(ctx, h.Tenant, h.hashes[n])
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if h.Name != "" && baseName(id) != h.Name {
			continue
		}
		sess, err := s.load(ctx, h.Tenant, id)
		if err != nil || sess == nil {
			continue
		}
		if sess.Transcript.Count == n && sess.Transcript.Hash == h.hashes[n] {
			return sess, nil
		}
	}
	return nil, nil
}
