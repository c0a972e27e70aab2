package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sessions"
)

// Compaction over the Responses API (POST /v1/responses/compact), answered by Hippocam's own
// consolidation instead of a summary written for the occasion.
//
// The answer is a compacted response ("object": "response.compaction") whose output is what
// Hippocam would send upstream for that history, as Responses items: the session's managed
// context (its memories and the messages not consolidated, each as a message item: the user's
// as user messages, answers and memories as assistant messages; tool calls and their results
// are left out, as a compacted history leaves them), then one compaction item. Its size is
// about what the next request will cost upstream, so a client that measures its history sees
// the size that matters. Its
// encrypted_content is opaque to the client; Hippocam reads it back: it names the session, how
// many messages of its transcript the history held, their hash, and the messages the session
// did not hold yet (those of a round still open, or a whole history no session holds).
//
// When a later request's input holds such a compaction item, the items before it (the
// compacted history, whatever the client kept of it) stand for what the item names: they are
// replaced by the session's transcript up to that point and the messages the item carries, and
// the request continues that session as if the client had sent its whole history. Nothing is
// deleted anywhere: the session keeps its whole tree, and compacting changes no session.

// compactionPrefix starts the encrypted_content of Hippocam's compaction items.
const compactionPrefix = "hippocam.v1."

// compactionState is what a compaction item stands for.
type compactionState struct {
	// Session names the session ("" when no session held the history); Count is how many
	// messages of its transcript the history held, Hash their transcript hash.
	Session string `json:"session,omitempty"`
	Count   int    `json:"count,omitempty"`
	Hash    string `json:"hash,omitempty"`
	// Tail holds the history's messages after those, which the session did not hold.
	Tail []hippocam.Message `json:"tail,omitempty"`
}

func (c *compactionState) encode() string {
	b, _ := json.Marshal(c)
	return compactionPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// decodeCompaction reads the encrypted_content of a compaction item; ok is false for content
// that is not Hippocam's.
func decodeCompaction(content string) (*compactionState, bool) {
	rest, ok := strings.CutPrefix(content, compactionPrefix)
	if !ok {
		return nil, false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return nil, false
	}
	var c compactionState
	if json.Unmarshal(b, &c) != nil || c.Count < 0 {
		return nil, false
	}
	return &c, true
}

// compacted is a request's last compaction item of Hippocam's, resolved: the messages it stands
// for, and the session they continue.
type compacted struct {
	session string
	before  []hippocam.Message
}

// apply puts the messages the compaction item stands for before the conversation's and, when the
// request names no session, names the item's. EINVALID with previous_response_id, which names
// another starting point.
func (c *compacted) apply(conv *hippocam.Conversation, name *string, named bool) error {
	if conv.Previous != "" {
		return hippocam.Errorf(hippocam.EINVALID, "input: a compaction item and previous_response_id cannot be used together")
	}
	conv.Messages = append(append([]hippocam.Message(nil), c.before...), conv.Messages...)
	conv.Hashes = nil
	if !named && c.session != "" {
		*name = c.session
	}
	return nil
}

// resolveCompaction finds the last compaction item of Hippocam's in a Responses body's input and
// removes it with every item before it; it returns the body and what the item stands for (nil
// when there is none). ENOTFOUND when the item names a session the tenant no longer has, or
// whose transcript no longer opens with the messages it held.
func (s *Server) resolveCompaction(ctx context.Context, tenant string, body []byte) ([]byte, *compacted, error) {
	if !bytes.Contains(body, []byte(compactionPrefix)) {
		return body, nil, nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return body, nil, nil // the reader reports it
	}
	var items []json.RawMessage
	if json.Unmarshal(top["input"], &items) != nil {
		return body, nil, nil
	}
	at, state := -1, (*compactionState)(nil)
	for i, raw := range items {
		var it struct {
			Type    string `json:"type"`
			Content string `json:"encrypted_content"`
		}
		if json.Unmarshal(raw, &it) != nil || it.Type != "compaction" {
			continue
		}
		if c, ok := decodeCompaction(it.Content); ok {
			at, state = i, c
		}
	}
	if state == nil {
		return body, nil, nil
	}
	cmp := &compacted{session: state.Session}
	if state.Session != "" {
		msgs, err := s.transcriptOf(ctx, tenant, state.Session)
		if err != nil || len(msgs) < state.Count || hippocam.TranscriptChain("", msgs[:state.Count])[state.Count] != state.Hash {
			return nil, nil, hippocam.Errorf(hippocam.ENOTFOUND, "input[%d]: the compaction item names a point of session %q that it no longer holds", at, state.Session)
		}
		cmp.before = msgs[:state.Count]
	}
	cmp.before = append(cmp.before, state.Tail...)
	top["input"], _ = json.Marshal(items[at+1:])
	b, err := json.Marshal(top)
	if err != nil {
		return nil, nil, err
	}
	return b, cmp, nil
}

// transcriptOf returns a session's transcript. ENOTFOUND when the tenant has no such session.
func (s *Server) transcriptOf(ctx context.Context, tenant, session string) ([]hippocam.Message, error) {
	sess, err := s.cfg.Store.Session(ctx, tenant, session)
	if err != nil {
		return nil, err
	}
	return sessions.Transcript(ctx, hippocam.SessionArchive(s.cfg.Store, tenant, session), sess.Context)
}

// compact is POST /v1/responses/compact.
func (s *Server) compact(w http.ResponseWriter, r *http.Request, tenant string) {
	conv, name, err := s.readResponses(w, r, tenant, false)
	if err == nil && len(conv.Messages) == 0 {
		err = hippocam.Errorf(hippocam.EINVALID, "input: there is nothing to compact")
	}
	if err != nil {
		s.fail(w, r, hippocam.FormatResponses, err)
		return
	}
	pv, err := s.preview(r, tenant, name, conv)
	if err != nil {
		s.fail(w, r, hippocam.FormatResponses, err)
		return
	}
	state := &compactionState{Tail: conv.Messages[pv.Holds:]}
	if !pv.Fresh {
		state.Session, state.Count, state.Hash = pv.Session, pv.Holds, pv.Hash
	}
	content := state.encode()
	sum := sha256.Sum256([]byte(content))
	id := hex.EncodeToString(sum[:12])
	output := contextItems(pv.Request.Messages[min(1+len(conv.Framing), len(pv.Request.Messages)):], id)
	enc, _ := json.Marshal(content)
	output = append(output, wire.OutputItem{ID: "cmp_" + id, Type: "compaction", Extra: wire.Extra{"encrypted_content": enc}})
	writeJSON(w, http.StatusOK, compactedResponse{ID: "resp_cmp_" + id, Object: "response.compaction", CreatedAt: time.Now().Unix(),
		Output: output, Usage: wire.ResponseUsage{InputTokens: pv.Tokens, TotalTokens: pv.Tokens}})
}

// compactedResponse is the Responses API's compacted response.
type compactedResponse struct {
	ID        string             `json:"id"`
	Object    string             `json:"object"`
	CreatedAt int64              `json:"created_at"`
	Output    []wire.OutputItem  `json:"output"`
	Usage     wire.ResponseUsage `json:"usage"`
}

// contextItems renders context messages as Responses message items: the user's as user
// messages, system messages within the conversation as developer messages, answers, memories
// and advisories as assistant messages; tool calls, tool results and messages
// without text are left out.
func contextItems(msgs []hippocam.Message, id string) []wire.OutputItem {
	var out []wire.OutputItem
	for i, m := range msgs {
		if m.Content == "" || m.Role == hippocam.RoleTool {
			continue
		}
		it := wire.OutputItem{ID: "msg_cmp_" + id + "_" + strconv.Itoa(i), Type: "message", Status: "completed", Role: "assistant",
			Content: []wire.OutputContent{{Type: "output_text", Text: m.Content}}}
		if m.Kind == hippocam.KindRaw && (m.Role == hippocam.RoleUser || m.Role == hippocam.RoleSystem) {
			it.Role, it.Content[0].Type = "user", "input_text"
			if m.Role == hippocam.RoleSystem {
				it.Role = "developer"
			}
		}
		out = append(out, it)
	}
	return out
}
