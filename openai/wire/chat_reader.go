package wire

import (
	"slices"
	"sync"

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

// readRequest is what a ChatReader keeps of one request. It never changes once made.
type readRequest struct {
	msgs    chunks[hippocam.Message] // the framing, then the conversation's messages
	framing int
	hashes  []string // hippocam.TranscriptChain("", the conversation's messages)
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
	var base *readRequest
	known := 0 // leading conversation messages whose hashes base has
	if r.same > 0 {
		base = r.bases[0]
		known = max(0, r.same-base.framing)
	}
	hashes := make([]string, 1, len(conv.Messages)+1)
	if known > 0 {
		hashes = append(hashes[:0], base.hashes[:known+1]...)
	}
	hashes = append(hashes, hippocam.TranscriptChain(hashes[known], conv.Messages[known:])[1:]...)
	conv.Hashes = hashes

	next := &readRequest{framing: len(conv.Framing), hashes: slices.Clip(slices.Clone(hashes))}
	if base != nil {
		next.msgs.share(&base.msgs, r.same)
	}
	for i := r.same; i < len(conv.Framing)+len(conv.Messages); i++ {
		if i < len(conv.Framing) {
			next.msgs.add(conv.Framing[i])
		} else {
			next.msgs.add(conv.Messages[i-len(conv.Framing)])
		}
	}
	c.keep(next, base, r.same)
	return conv, req, nil
}

// keep records next, read with its first same messages taken from base (nil: none). A request
// that carries on from base takes its place: the agent will not resend the older history.
func (c *ChatReader) keep(next, base *readRequest, same int) {
	if c.max == 0 || next.msgs.n > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if base != nil && 2*same >= base.msgs.n {
		if i := slices.Index(c.recent, base); i >= 0 {
			c.kept -= base.msgs.n
			c.recent = slices.Delete(c.recent, i, i+1)
		}
	}
	c.recent = append(c.recent, next)
	c.kept += next.msgs.n
	for c.kept > c.max {
		c.kept -= c.recent[0].msgs.n
		c.recent = slices.Delete(c.recent, 0, 1)
	}
}
