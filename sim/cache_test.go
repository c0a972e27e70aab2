package sim_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai/wire"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// streamTokens is the length of the token stream the cache reads for req: the prompt tokens
// less the reply priming.
func streamTokens(t *testing.T, req *wire.ChatRequest) int {
	t.Helper()
	msgs, tools, err := wire.ToRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	return hippocam.RequestTokens(tokenizer.MustDefault(), msgs, tools) - hippocam.RequestTokens(tokenizer.MustDefault(), nil, nil)
}

func cachedTokens(t *testing.T, m *sim.Model, role hippocam.CallRole, req *wire.ChatRequest) (cached, prompt int) {
	t.Helper()
	resp := complete(t, m, role, req)
	return resp.Usage.PromptTokensDetails.CachedTokens, resp.Usage.PromptTokens
}

func floorBlock(n int) int { return n / 128 * 128 }

// rows is a text of about n tokens.
func rows(prefix string, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n*2; i++ {
		fmt.Fprintf(&b, "%s row %d;value %d;ok\n", prefix, i, i*7)
	}
	return b.String()
}

func TestPromptCache(t *testing.T) {
	long := system("You are a helpful agent.\n" + rows("policy", 3000))
	base := agentChat(user("hello"))
	base.Messages[0] = long

	t.Run("RepeatedPrompt", func(t *testing.T) {
		m := mustModel(t)
		if c, _ := cachedTokens(t, m, hippocam.CallAgent, base); c != 0 {
			t.Fatalf("first request: %d cached tokens, want 0", c)
		}
		c, p := cachedTokens(t, m, hippocam.CallAgent, base)
		if want := floorBlock(streamTokens(t, base)); c != want || c == 0 || c > p {
			t.Fatalf("repeated request: %d cached tokens of %d, want %d", c, p, want)
		}
	})
	t.Run("ExtendedPrompt", func(t *testing.T) {
		m := mustModel(t)
		cachedTokens(t, m, hippocam.CallAgent, base)
		ext := agentChat(user("hello"), assistant("ok"), user("!say more"))
		ext.Messages[0] = long
		if c, _ := cachedTokens(t, m, hippocam.CallAgent, ext); c != floorBlock(streamTokens(t, base)) {
			t.Fatalf("extended request: %d cached tokens, want %d", c, floorBlock(streamTokens(t, base)))
		}
	})
	t.Run("TokenLevelInsideAMessage", func(t *testing.T) {
		m := mustModel(t)
		body := rows("export", 2000)
		first := agentChat(user("short"), user(body))
		first.Messages[0] = long
		cachedTokens(t, m, hippocam.CallAgent, first)
		second := agentChat(user("short"), user(body+"one more row"))
		second.Messages[0] = long
		c, _ := cachedTokens(t, m, hippocam.CallAgent, second)
		shared := streamTokens(t, first) // all of first but possibly its last tokens
		head := agentChat(user("short"))
		head.Messages[0] = long
		before := streamTokens(t, head)
		if c > shared || c < floorBlock(shared-8) || c <= floorBlock(before+4) {
			t.Fatalf("cached %d, want about %d (the message starts at token %d)", c, floorBlock(shared), before)
		}
	})
	t.Run("ShortPromptsNotCached", func(t *testing.T) {
		m := mustModel(t)
		short := agentChat(user(rows("short", 350)))
		for i := 0; i < 3; i++ {
			if c, p := cachedTokens(t, m, hippocam.CallAgent, short); c != 0 || p >= 1024 || p < 3*128 {
				t.Fatalf("prompt of %d tokens: %d cached", p, c)
			}
		}
	})
	t.Run("SharedAcrossRoles", func(t *testing.T) {
		m := mustModel(t)
		cachedTokens(t, m, hippocam.CallAgent, base)
		if c, _ := cachedTokens(t, m, hippocam.CallPalim, base); c == 0 {
			t.Fatal("a palim request with the agent's prefix got no cached tokens")
		}
	})
	t.Run("DifferentToolsDifferentPrefix", func(t *testing.T) {
		m := mustModel(t)
		cachedTokens(t, m, hippocam.CallAgent, base)
		bare := *base
		bare.Tools = nil
		if c, _ := cachedTokens(t, m, hippocam.CallAgent, &bare); c != 0 {
			t.Fatalf("without the tools: %d cached tokens, want 0", c)
		}
	})
}

// countWords is a tokenizer that can only count: one token per word.
type countWords struct{}

func (countWords) Count(s string) int { return len(strings.Fields(s)) }

func TestPromptCacheWithoutEncoder(t *testing.T) {
	m := sim.New(countWords{})
	long := system(strings.Repeat("policy word ", 1500))
	req := chat(long, user("!say hi"))
	if c, _ := cachedTokens(t, m, hippocam.CallAgent, req); c != 0 {
		t.Fatalf("first request: %d cached", c)
	}
	c, p := cachedTokens(t, m, hippocam.CallAgent, req)
	if c == 0 || c%128 != 0 || c > p {
		t.Fatalf("repeated request: %d cached of %d", c, p)
	}
	if got := answerText(t, complete(t, m, hippocam.CallAgent, chat(user("!pad 50")))); len(strings.Fields(got)) != 50 {
		t.Fatalf("pad 50 with a word tokenizer gave %d words", len(strings.Fields(got)))
	}
}

// countBytes is a tokenizer with one token per byte: filler words are then several tokens each.
type countBytes struct{}

func (countBytes) Count(s string) int { return len(s) }

func TestPadWithCoarseWords(t *testing.T) {
	m := sim.New(countBytes{})
	for _, n := range []int{1, 10, 500, 4000} {
		got := answerText(t, complete(t, m, hippocam.CallAgent, chat(user("!pad "+itoa(n)))))
		if d := len(got) - n; d < -6 || d > 6 {
			t.Errorf("pad %d gave %d tokens", n, len(got))
		}
	}
}

// TestPromptCacheLongSession checks that a long session is not encoded again on every call: a
// request that adds two short messages to a 120k-token prompt encodes only those.
func TestPromptCacheLongSession(t *testing.T) {
	if testing.Short() {
		t.Skip("long prompt")
	}
	m := mustModel(t)
	var msgs []wire.ChatMessage
	for i := 0; i < 60; i++ {
		msgs = append(msgs, user(rows(fmt.Sprintf("m%d", i), 2000)), assistant("ok"))
	}
	req := agentChat(msgs...)
	began := time.Now()
	c, p := cachedTokens(t, m, hippocam.CallAgent, req)
	firstTook := time.Since(began)
	if p < 100000 || c != 0 {
		t.Fatalf("first request: %d prompt tokens, %d cached", p, c)
	}
	encoded := m.EncodedTokens()
	for i := 0; i < 5; i++ {
		msgs = append(msgs, user(fmt.Sprintf("next %d", i)), assistant("ok"))
		began = time.Now()
		c, p = cachedTokens(t, m, hippocam.CallAgent, agentChat(msgs...))
		took := time.Since(began)
		if p-c > 256 {
			t.Fatalf("request %d: %d of %d prompt tokens cached", i, c, p)
		}
		if n := m.EncodedTokens() - encoded; n > 8 {
			t.Fatalf("request %d encoded %d tokens, want only its new messages", i, n)
		}
		encoded = m.EncodedTokens()
		t.Logf("request %d: %d prompt tokens in %v (the first took %v)", i, p, took, firstTook)
	}
}

func BenchmarkLongSession(b *testing.B) {
	m := mustModel(b)
	var msgs []wire.ChatMessage
	for i := 0; i < 60; i++ {
		msgs = append(msgs, user(rows(fmt.Sprintf("m%d", i), 2000)), assistant("ok"))
	}
	complete(b, m, hippocam.CallAgent, agentChat(msgs...))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		msgs = append(msgs, user(fmt.Sprintf("next %d", i)), assistant("ok"))
		complete(b, m, hippocam.CallAgent, agentChat(msgs...))
	}
}
