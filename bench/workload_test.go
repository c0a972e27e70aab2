package bench

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/tokenizer"
)

var generators = []struct {
	name string
	gen  func(seed int64, tokens int, tok hippocam.Tokenizer) *Workload
}{
	{NameAgentic, Agentic},
	{NameFactStream, FactStream},
	{NameInterleaved, Interleaved},
}

func TestGeneratorsDeterministic(t *testing.T) {
	tok := tokenizer.MustDefault()
	for _, g := range generators {
		t.Run(g.name, func(t *testing.T) {
			a, b := g.gen(7, 12000, tok), g.gen(7, 12000, tok)
			if !reflect.DeepEqual(a, b) {
				t.Fatal("the same seed gave two different workloads")
			}
			if c := g.gen(8, 12000, tok); reflect.DeepEqual(a.Lines, c.Lines) {
				t.Fatal("seeds 7 and 8 gave the same lines")
			}
		})
	}
}

func TestGeneratorsSized(t *testing.T) {
	tok := tokenizer.MustDefault()
	for _, g := range generators {
		for _, size := range []int{8000, 30000, 100000} {
			t.Run(fmt.Sprintf("%s/%d", g.name, size), func(t *testing.T) {
				w := g.gen(1, size, tok)
				n := 0
				for _, l := range w.Lines {
					n += tok.Count(l.Content)
				}
				if n != w.LengthTokens {
					t.Fatalf("LengthTokens = %d, but the lines hold %d tokens", w.LengthTokens, n)
				}
				if lo, hi := size*97/100, size*103/100; n < lo || n > hi {
					t.Fatalf("%d content tokens, want %d ±3%%", n, size)
				}
				if w.Name != g.name || w.Variant != variantName(size) {
					t.Fatalf("named %s %s, want %s %s", w.Name, w.Variant, g.name, variantName(size))
				}
			})
		}
	}
}

// scanned is what reading a workload's lines as the simulated model does tells about one key.
type scanned struct {
	values []string
	detail bool
}

// TestGeneratorsQuestionsMatchLines reads every line the way the simulated model does and checks
// the workload against it: lines are numbered and well formed, filler holds no directive or
// fact, tool results answer exactly the calls before them, intents open and close as a stack,
// and every question's answer is the latest value written, its stale answers the earlier ones.
func TestGeneratorsQuestionsMatchLines(t *testing.T) {
	tok := tokenizer.MustDefault()
	for _, g := range generators {
		for _, seed := range []int64{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/seed%d", g.name, seed), func(t *testing.T) {
				w := g.gen(seed, 40000, tok)
				facts, asked, depth := checkLines(t, w)
				if depth.final != 0 {
					t.Fatalf("%d intents still open at the end", depth.final)
				}
				if len(asked) != len(w.Questions) {
					t.Fatalf("%d !ask lines, %d questions", len(asked), len(w.Questions))
				}
				var unknown, stale, detail int
				for i, q := range w.Questions {
					if asked[i] != q.Key {
						t.Fatalf("question %d is about %s, its line asks %s", i, q.Key, asked[i])
					}
					f := facts[q.Key]
					want := q.Key + " := unknown"
					var wantStale []string
					if f != nil {
						want = q.Key + " := " + f.values[len(f.values)-1]
						for _, v := range f.values[:len(f.values)-1] {
							if a := q.Key + " := " + v; !slices.Contains(wantStale, a) {
								wantStale = append(wantStale, a)
							}
						}
					}
					if q.Want != want || !reflect.DeepEqual(q.Stale, wantStale) || q.Detail != (f != nil && f.detail) {
						t.Fatalf("question %d: %+v, but the lines say want %q, stale %q, detail %v", i, q, want, wantStale, f != nil && f.detail)
					}
					if f == nil {
						unknown++
					}
					if len(q.Stale) > 0 {
						stale++
					}
					if q.Detail {
						detail++
					}
				}
				if unknown != 1 || stale < 2 || detail < 2 || len(w.Questions) < 8 {
					t.Fatalf("%d questions: %d about unknown keys, %d with stale answers, %d about details", len(w.Questions), unknown, stale, detail)
				}
				if g.name == NameAgentic && depth.max != 3 {
					t.Fatalf("agentic intents nest %d deep, want 3", depth.max)
				}
				if g.name == NameFactStream && depth.max != 0 {
					t.Fatalf("the fact stream opens intents (%d deep)", depth.max)
				}
			})
		}
	}
}

type depths struct{ max, final int }

// checkLines checks the form of every line and returns the facts written, the keys asked in
// order, and how deep intents went.
func checkLines(t *testing.T, w *Workload) (map[string]*scanned, []string, depths) {
	t.Helper()
	facts := map[string]*scanned{}
	var asked, stack []string
	var d depths
	pending := 0
	for i, l := range w.Lines {
		if l.Number != i+1 {
			t.Fatalf("line %d is numbered %d", i+1, l.Number)
		}
		switch l.Role {
		case hippocam.RoleTool:
			if pending == 0 {
				t.Fatalf("line %d: a tool result nothing waits for", l.Number)
			}
			pending--
		case hippocam.RoleUser:
			if pending > 0 {
				t.Fatalf("line %d: a user message while %d calls wait", l.Number, pending)
			}
		default:
			t.Fatalf("line %d: role %s", l.Number, l.Role)
		}
		for _, text := range strings.Split(l.Content, "\n") {
			body := simBody(text)
			if k, v, det, ok := factLine(text); ok {
				if body != text || v == "" || v == "unknown" || strings.Contains(v, ":=") {
					t.Fatalf("line %d: odd fact line %q", l.Number, text)
				}
				f := facts[k]
				if f == nil {
					f = &scanned{}
					facts[k] = f
				}
				f.values = append(f.values, v)
				f.detail = f.detail || det
				continue
			}
			if k, ok := askLine(text); ok {
				asked = append(asked, k)
				continue
			}
			switch {
			case strings.HasPrefix(body, "#open "):
				stack = append(stack, strings.TrimSpace(strings.SplitN(body[len("#open "):], "|", 2)[0]))
				d.max = max(d.max, len(stack))
			case strings.HasPrefix(body, "#close "):
				if len(stack) == 0 || stack[len(stack)-1] != body[len("#close "):] {
					t.Fatalf("line %d: %q does not close the top of %q", l.Number, body, stack)
				}
				stack = stack[:len(stack)-1]
			case strings.HasPrefix(body, "!call "):
				pending++
			case strings.HasPrefix(body, "!say "):
			default:
				if body != text || strings.ContainsAny(body[:1], "#!-*•[") || strings.Contains(body, ":=") || strings.Contains(body, "[ref:") || strings.HasPrefix(body, "detail") {
					t.Fatalf("line %d: filler the simulated model could misread: %q", l.Number, text)
				}
			}
		}
	}
	if pending > 0 {
		t.Fatalf("%d calls wait for results at the end", pending)
	}
	d.final = len(stack)
	return facts, asked, d
}

func TestConfigSizes(t *testing.T) {
	c := DefaultConfig()
	full := c.Sizes()
	streams := 0
	for _, s := range full {
		if s.Name != NameFactStream && s.Tokens < 16*c.Window {
			t.Errorf("%s at %d tokens: the full run goes to 16 W = %d", s.Name, s.Tokens, 16*c.Window)
		}
		if s.Name == NameFactStream {
			streams++
		}
	}
	if streams < 3 {
		t.Errorf("%d fact-stream lengths, want several", streams)
	}
	c.Quick = true
	for _, s := range c.Sizes() {
		if s.Tokens > 4*c.Window {
			t.Errorf("quick %s at %d tokens", s.Name, s.Tokens)
		}
	}
	if err := (Config{Window: 500}).Validate(); hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Errorf("Validate with W = 500: %v", err)
	}
	if _, err := Generate("nope", 1, 1000, tokenizer.MustDefault()); hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Errorf("Generate(nope): %v", err)
	}
}
