package wire

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hippocam/hippocam"
)

// ChatReader reads chat requests as ReadChatRequest does, and remembers the messages of the
// latest requests it read, with their transcript hashes. An agent resends its whole history
// with every request: the leading messages a request shares byte for byte with one it remembers
// are taken from it instead of decoded, converted and hashed again, so that reading a request
// costs about a scan of its body and the work its new messages need. It is safe for concurrent
// use.
//
// The messages it gives out share their strings, tool calls and Origin with the ones it keeps,
// as the messages of a session do: they must not be changed in place.
type ChatReader struct {
	mu     sync.Mutex
	max    int // messages the kept requests may hold in all; 0 keeps none
	kept   int
	recent []*readRequest // most recently read last
}

// readRequest is what a ChatReader keeps of one request. What it holds never changes once made;
// the room after msgs and hashes (their spare capacity) belongs to the first request read that
// continues this one and claims it (room), which appends its own messages and hashes there
// instead of copying them.
type readRequest struct {
	msgs    []hippocam.Message // the framing, then the conversation's messages
	framing int
	hashes  []string // hippocam.TranscriptChain("", the conversation's messages)
	room    atomic.Bool
}

// NewChatReader returns a reader that remembers requests holding up to maxMessages messages in
// all (0: none; it then reads as ReadChatRequest, hashes included).
func NewChatReader(maxMessages int) *ChatReader {
	return &ChatReader{max: max(0, maxMessages)}
}

// Read reads body as ReadChatRequest does, with the same results and errors, and sets the
// conversation's Hashes.
func (c *ChatReader) Read(body []byte) (*hippocam.Conversation, *ChatRequest, error) {
	c.mu.Lock()
	bases := slices.Clone(c.recent)
	c.mu.Unlock()
	conv, req, r, err := readChat(body, bases)
	if err != nil {
		return nil, nil, err
	}
	base := r.from
	known := 0 // leading conversation messages whose hashes base has
	if base != nil {
		known = max(0, r.same-base.framing)
	}
	var hashes []string
	switch {
	case r.claimed:
		hashes = base.hashes // its room is this request's too
	case known > 0:
		hashes = append(make([]string, 0, len(conv.Messages)+1+readRoom(len(conv.Messages))), base.hashes[:known+1]...)
	default:
		hashes = make([]string, 1, len(conv.Messages)+1+readRoom(len(conv.Messages)))
	}
	hashes = append(hashes, hippocam.TranscriptChain(hashes[known], conv.Messages[known:])[1:]...)
	conv.Hashes = hashes[:len(hashes):len(hashes)]

	next := &readRequest{msgs: r.all, framing: len(conv.Framing), hashes: hashes}
	c.keep(next, base, r.same)
	return conv, req, nil
}

// keep records next, read with its first same messages taken from base (nil: none). A request
// that carries on from base takes its place: the agent will not resend the older history.
func (c *ChatReader) keep(next, base *readRequest, same int) {
	if c.max == 0 || len(next.msgs) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if base != nil && 2*same >= len(base.msgs) {
		if i := slices.Index(c.recent, base); i >= 0 {
			c.kept -= len(base.msgs)
			c.recent = slices.Delete(c.recent, i, i+1)
		}
	}
	c.recent = append(c.recent, next)
	c.kept += len(next.msgs)
	for c.kept > c.max {
		c.kept -= len(c.recent[0].msgs)
		c.recent = slices.Delete(c.recent, 0, 1)
	}
}
