package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"hash/fnv"
	"sync"
	"sync/atomic"

	"github.com/hippocam/hippocam"
)

// The simulated provider prompt cache (docs/sim.md, "Tokens and cache"). A prompt is read as one
// stream of tokens: the tool schemas, then the messages, each framed by as many marker tokens as
// hippocam.RequestTokens counts for its framing, so that the stream is as long as the prompt less
// the reply priming. The stream is cut into blocks of cacheBlock tokens and each block is hashed
// together with the hash of the block before it, so a block's hash stands for the whole prefix
// that ends with it. A prompt's cached tokens are its leading blocks whose hashes were seen
// before; then all of its block hashes are remembered. Prompts shorter than cacheMinPrompt are
// neither served from the cache nor stored in it, as with OpenAI.
//
// Markers carry what tells messages apart besides their text (role, tool call ids), so two
// prompts share a prefix only when their messages are the same. Token ids come from the
// tokenizer when it can encode (tokenizer.BPE can); each distinct text is encoded once and kept
// for later requests. A tokenizer that can only count gives every text one id repeated over its
// length, so prefixes then match message by message: a message whose text differs at all shares
// none of its tokens.

const (
	cacheBlock     = 128     // tokens per cached block
	cacheMinPrompt = 1024    // shorter prompts are not cached
	memoTokens     = 1 << 22 // token ids of encoded texts kept for reuse
	generationSize = 1 << 21 // block hashes per generation of the cache
)

// encoder is implemented by tokenizers that return token ids.
type encoder interface {
	Encode(text string) []uint
}

// Marker kinds, kept in the top byte of a marker token so that markers never equal a real
// token id (those are far below 2^32).
const (
	markTool uint64 = 0x80 + iota
	markMessage
	markCall
	markFrame
	markText
)

type memoEntry struct {
	key [16]byte
	n   int
}

type promptCache struct {
	tok hippocam.Tokenizer
	enc encoder
	// Framing sizes, as hippocam.RequestTokens counts them.
	messageFrame, callFrame, toolFrame int

	memoMu  sync.Mutex
	memo    map[[16]byte][]uint32
	fifo    []memoEntry
	memoLen int
	encoded atomic.Int64 // tokens encoded so far (memo misses), for tests

	mu       sync.Mutex
	cur, old map[uint64]struct{}
}

func newPromptCache(tok hippocam.Tokenizer) *promptCache {
	c := &promptCache{tok: tok, memo: map[[16]byte][]uint32{}, cur: map[uint64]struct{}{}}
	c.enc, _ = tok.(encoder)
	c.messageFrame = max(0, hippocam.MessageTokens(tok, &hippocam.Message{}))
	c.callFrame = max(0, hippocam.MessageTokens(tok, &hippocam.Message{ToolCalls: []hippocam.ToolCall{{}}})-c.messageFrame)
	c.toolFrame = max(0, hippocam.ToolTokens(tok, &hippocam.Tool{}))
	return c
}

// serve returns the cached tokens of a prompt of promptTokens tokens and remembers its blocks.
func (c *promptCache) serve(msgs []hippocam.Message, tools []hippocam.Tool, promptTokens int) int {
	if promptTokens < cacheMinPrompt {
		return 0
	}
	hashes := c.blocks(msgs, tools)
	c.mu.Lock()
	defer c.mu.Unlock()
	hit := 0
	for hit < len(hashes) && c.has(hashes[hit]) {
		hit++
	}
	for _, h := range hashes {
		c.add(h)
	}
	return min(hit*cacheBlock, promptTokens)
}

// has reports whether h was seen, moving it into the current generation if it was seen in the
// old one.
func (c *promptCache) has(h uint64) bool {
	if _, ok := c.cur[h]; ok {
		return true
	}
	if _, ok := c.old[h]; ok {
		c.add(h)
		return true
	}
	return false
}

// add remembers h. When the current generation is full it becomes the old one and the previous
// old one is forgotten, so the cache stays bounded while recent prefixes survive.
func (c *promptCache) add(h uint64) {
	if _, ok := c.cur[h]; ok {
		return
	}
	if len(c.cur) >= generationSize {
		c.old, c.cur = c.cur, make(map[uint64]struct{}, generationSize/4)
	}
	c.cur[h] = struct{}{}
}

// blocks returns the chained hashes of the prompt's whole blocks.
func (c *promptCache) blocks(msgs []hippocam.Message, tools []hippocam.Tool) []uint64 {
	var ch chain
	for i := range tools {
		t := &tools[i]
		ch.marks(markTool, hashText(t.Name), c.toolFrame)
		c.text(&ch, t.Name)
		c.text(&ch, t.Description)
		c.text(&ch, string(t.Parameters))
	}
	for i := range msgs {
		m := &msgs[i]
		ch.marks(markMessage, hashText(string(m.Role)+"\x00"+m.ToolCallID), c.messageFrame)
		c.text(&ch, m.Content)
		for _, call := range m.ToolCalls {
			ch.marks(markCall, hashText(call.ID), c.callFrame)
			c.text(&ch, call.Name)
			c.text(&ch, call.Arguments)
		}
	}
	return ch.hashes
}

// text appends the tokens of s to the stream.
func (c *promptCache) text(ch *chain, s string) {
	if s == "" {
		return
	}
	if c.enc == nil {
		id := marker(markText, hashText(s))
		for n := c.tok.Count(s); n > 0; n-- {
			ch.push(id)
		}
		return
	}
	for _, id := range c.encode(s) {
		ch.push(uint64(id))
	}
}

// encode returns the token ids of s, encoding each distinct text once while it stays in the memo.
func (c *promptCache) encode(s string) []uint32 {
	sum := sha256.Sum256([]byte(s))
	var key [16]byte
	copy(key[:], sum[:])
	c.memoMu.Lock()
	ids, ok := c.memo[key]
	c.memoMu.Unlock()
	if ok {
		return ids
	}
	raw := c.enc.Encode(s)
	ids = make([]uint32, len(raw))
	for i, id := range raw {
		ids[i] = uint32(id)
	}
	c.encoded.Add(int64(len(ids)))
	if len(ids) > memoTokens {
		return ids
	}
	c.memoMu.Lock()
	defer c.memoMu.Unlock()
	if _, ok := c.memo[key]; ok {
		return ids
	}
	c.memo[key] = ids
	c.fifo = append(c.fifo, memoEntry{key, len(ids)})
	c.memoLen += len(ids)
	for c.memoLen > memoTokens {
		e := c.fifo[0]
		c.fifo = c.fifo[1:]
		delete(c.memo, e.key)
		c.memoLen -= e.n
	}
	return ids
}

// chain hashes a token stream block by block, each block with the hash of the one before.
type chain struct {
	buf    [8 + 8*cacheBlock]byte // the previous hash, then the block's tokens
	n      int
	hashes []uint64
}

func (ch *chain) push(id uint64) {
	binary.LittleEndian.PutUint64(ch.buf[8+8*ch.n:], id)
	if ch.n++; ch.n == cacheBlock {
		sum := sha256.Sum256(ch.buf[:])
		h := binary.LittleEndian.Uint64(sum[:8])
		ch.hashes = append(ch.hashes, h)
		binary.LittleEndian.PutUint64(ch.buf[:8], h)
		ch.n = 0
	}
}

// marks appends n marker tokens; the first carries h, the rest only say they are framing.
func (ch *chain) marks(kind, h uint64, n int) {
	for i := 0; i < n; i++ {
		if i == 0 {
			ch.push(marker(kind, h))
		} else {
			ch.push(marker(markFrame, 0))
		}
	}
}

func marker(kind, h uint64) uint64 { return kind<<56 | h&(1<<56-1) }

func hashText(s string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(s))
	return f.Sum64()
}
