// Package tokenizer counts tokens offline with a real BPE vocabulary (tiktoken's o200k_base by
// default, embedded in the binary), behind hippocam.Tokenizer.
package tokenizer

import (
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/hippocam/hippocam"
	tiktoken "github.com/tiktoken-go/tokenizer"
)

var _ hippocam.Tokenizer = (*BPE)(nil)

// DefaultEncoding is the vocabulary used when none is named.
const DefaultEncoding = "o200k_base"

// cacheSize bounds the memo of recent counts. Long sessions count the same messages again and
// again (requests resend them); the memo makes that cheap.
const cacheSize = 1 << 16

// BPE counts tokens with a byte-pair-encoding vocabulary. It is safe for concurrent use.
type BPE struct {
	codec tiktoken.Codec
	seed  maphash.Seed

	mu    sync.Mutex
	memo  map[uint64]int
	order []uint64
	next  int
}

// New returns a tokenizer for the named encoding ("o200k_base", "cl100k_base", …).
// EINVALID for an encoding the library does not know.
func New(encoding string) (*BPE, error) {
	if encoding == "" {
		encoding = DefaultEncoding
	}
	c, err := tiktoken.Get(tiktoken.Encoding(encoding))
	if err != nil {
		return nil, hippocam.Errorf(hippocam.EINVALID, "tokenizer %q: %v", encoding, err)
	}
	return &BPE{codec: c, seed: maphash.MakeSeed(), memo: make(map[uint64]int, cacheSize), order: make([]uint64, cacheSize)}, nil
}

var (
	defaultOnce sync.Once
	defaultBPE  *BPE
	defaultErr  error
)

// Default returns a shared o200k_base tokenizer, loading the vocabulary once per process.
func Default() (*BPE, error) {
	defaultOnce.Do(func() { defaultBPE, defaultErr = New(DefaultEncoding) })
	return defaultBPE, defaultErr
}

// MustDefault is Default for tests and benchmarks; it panics if the embedded vocabulary fails
// to load, which would be a build defect.
func MustDefault() *BPE {
	t, err := Default()
	if err != nil {
		panic(fmt.Sprintf("tokenizer: %v", err))
	}
	return t
}

// Count returns the number of tokens in text.
func (t *BPE) Count(text string) int {
	if text == "" {
		return 0
	}
	if len(text) < 32 {
		n, _ := t.codec.Count(text)
		return n
	}
	key := maphash.String(t.seed, text)
	t.mu.Lock()
	n, ok := t.memo[key]
	t.mu.Unlock()
	if ok {
		return n
	}
	n, _ = t.codec.Count(text)
	t.mu.Lock()
	if _, ok := t.memo[key]; !ok {
		if old := t.order[t.next]; old != 0 {
			delete(t.memo, old)
		}
		t.order[t.next] = key
		t.next = (t.next + 1) % cacheSize
		t.memo[key] = n
	}
	t.mu.Unlock()
	return n
}

// Encode returns the token ids of text.
func (t *BPE) Encode(text string) []uint {
	ids, _, _ := t.codec.Encode(text)
	return ids
}
