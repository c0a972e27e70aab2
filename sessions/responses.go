package sessions

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/hippocam/hippocam"
)

// Continuing by reference (the OpenAI Responses format): a request may send only its new items
// and name the response it follows (previous_response_id), or refer to earlier output by its
// item id (item_reference). Hippocam names each answer after its session, so that such a
// reference resolves to messages of one of the tenant's sessions without any table of its own:
//
//	response id:  "resp_" + base64url(session) + "." + answer key
//	output items: "msg_" + the same tail (the message), "fc_" + the same tail + "_N" (call N)
//
// The answer key is the answer's message id, or "@N" for the answer at index N of the transcript
// (the key of a response whose text streamed before the answer had an id). The transport
// (package httpapi) reads the wire format and rebuilds items; which messages a reference means
// is decided here.

// ResponseID names an answer of a session.
func ResponseID(session, answer string) string {
	return "resp_" + base64.RawURLEncoding.EncodeToString([]byte(session)) + "." + answer
}

// ParseResponseID reads a ResponseID into the session and the answer key it names.
func ParseResponseID(id string) (session, answer string, ok bool) {
	rest, found := strings.CutPrefix(id, "resp_")
	if !found {
		return "", "", false
	}
	enc, answer, found := strings.Cut(rest, ".")
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if !found || err != nil || answer == "" {
		return "", "", false
	}
	return string(b), answer, true
}

// PreviousResponse resolves previous_response_id: the session the response belongs to, and
// that session's transcript up to and including the response's answer, which the request's new
// messages continue. ENOTFOUND when the tenant has no such response.
func (s *Service) PreviousResponse(ctx context.Context, tenant, responseID string) (session string, before []hippocam.Message, err error) {
	session, answer, ok := ParseResponseID(responseID)
	if !ok {
		return "", nil, hippocam.Errorf(hippocam.ENOTFOUND, "previous_response_id %q names no response of Hippocam's", responseID)
	}
	before, err = s.transcriptUpTo(ctx, tenant, session, answer)
	if err != nil {
		return "", nil, hippocam.Errorf(hippocam.ENOTFOUND, "previous_response_id %q: no such response", responseID)
	}
	return session, before, nil
}

// Response returns the session and the answer a response id names. ENOTFOUND when the tenant
// has no such session, or the id names no answer of it (a message that is not the model's
// answer included); the store's error otherwise.
func (s *Service) Response(ctx context.Context, tenant, responseID string) (*hippocam.Session, *hippocam.Message, error) {
	session, answer, ok := ParseResponseID(responseID)
	if !ok {
		return nil, nil, hippocam.Errorf(hippocam.ENOTFOUND, "%q names no response of Hippocam's", responseID)
	}
	sess, err := s.cfg.Store.Session(ctx, tenant, session)
	if err != nil {
		return nil, nil, err
	}
	m, err := s.answer(ctx, tenant, session, answer)
	if err != nil {
		return nil, nil, err
	}
	if m.Role != hippocam.RoleAssistant {
		return nil, nil, hippocam.Errorf(hippocam.ENOTFOUND, "%q names no answer", responseID)
	}
	return sess, m, nil
}

// ReferencedItem resolves the id of an output item Hippocam gave (item_reference): the
// response it belongs to, that response's answer, and which item of it the id names: -1 for the
// message, N for the answer's tool call N. ENOTFOUND for an id that names nothing the tenant
// has.
func (s *Service) ReferencedItem(ctx context.Context, tenant, itemID string) (responseID string, answer *hippocam.Message, call int, err error) {
	notFound := hippocam.Errorf(hippocam.ENOTFOUND, "item_reference %q names no item of Hippocam's", itemID)
	var rest string
	call = -1
	switch {
	case strings.HasPrefix(itemID, "msg_"):
		rest = strings.TrimPrefix(itemID, "msg_")
	case strings.HasPrefix(itemID, "fc_"):
		rest = strings.TrimPrefix(itemID, "fc_")
		i := strings.LastIndexByte(rest, '_')
		if i < 0 {
			return "", nil, 0, notFound
		}
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil {
			return "", nil, 0, notFound
		}
		rest, call = rest[:i], n
	default:
		return "", nil, 0, notFound
	}
	responseID = "resp_" + rest
	session, key, ok := ParseResponseID(responseID)
	if !ok {
		return "", nil, 0, notFound
	}
	m, err := s.answer(ctx, tenant, session, key)
	if err != nil {
		return "", nil, 0, notFound
	}
	return responseID, m, call, nil
}

// transcriptUpTo returns a session's transcript up to and including the answer with the given
// key. ENOTFOUND when the session or the answer is not there.
func (s *Service) transcriptUpTo(ctx context.Context, tenant, session, answer string) ([]hippocam.Message, error) {
	sess, err := s.cfg.Store.Session(ctx, tenant, session)
	if err != nil {
		return nil, err
	}
	msgs, err := Transcript(ctx, hippocam.SessionArchive(s.cfg.Store, tenant, session), sess.Context)
	if err != nil {
		return nil, err
	}
	if i, ok := answerPosition(answer); ok {
		if i < len(msgs) && msgs[i].Role == hippocam.RoleAssistant {
			return msgs[:i+1], nil
		}
	}
	for i := range msgs {
		if msgs[i].ID == answer && msgs[i].Role == hippocam.RoleAssistant {
			return msgs[:i+1], nil
		}
	}
	return nil, hippocam.Errorf(hippocam.ENOTFOUND, "no answer %q in session %q", answer, session)
}

// answerPosition reads an answer key of the form "@N".
func answerPosition(answer string) (int, bool) {
	rest, ok := strings.CutPrefix(answer, "@")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0 && strconv.Itoa(n) == rest
}

// answer returns the message an answer key names: a message id of the session's tree, or "@N"
// (an answer of the transcript).
func (s *Service) answer(ctx context.Context, tenant, session, answer string) (*hippocam.Message, error) {
	if _, ok := answerPosition(answer); !ok {
		return s.cfg.Store.Message(ctx, tenant, session, answer)
	}
	msgs, err := s.transcriptUpTo(ctx, tenant, session, answer)
	if err != nil {
		return nil, err
	}
	return &msgs[len(msgs)-1], nil
}
