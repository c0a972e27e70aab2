package tokenizer_test

import (
	"strings"
	"testing"

	"github.com/hippocam/hippocam/tokenizer"
)

func TestCount(t *testing.T) {
	tok := tokenizer.MustDefault()
	if got := tok.Count("hello world"); got != 2 {
		t.Fatalf("Count(hello world) = %d, want 2", got)
	}
	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 50)
	first := tok.Count(long)
	if first < 400 || first > 600 {
		t.Fatalf("Count(long) = %d, want about 500", first)
	}
	if again := tok.Count(long); again != first {
		t.Fatalf("memoised count %d != %d", again, first)
	}
	if n := len(tok.Encode(long)); n != first {
		t.Fatalf("Encode gives %d tokens, Count %d", n, first)
	}
}

func TestNewUnknown(t *testing.T) {
	if _, err := tokenizer.New("no_such_encoding"); err == nil {
		t.Fatal("want an error for an unknown encoding")
	}
}
