package lessons_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/lessons"
)

// breaking answers the first bad calls of one role with a broken answer, and passes every other
// call on.
type breaking struct {
	hippocam.Model
	role   hippocam.CallRole
	answer string
	bad    int

	mu   sync.Mutex
	seen int
}

func (b *breaking) Complete(ctx context.Context, req *hippocam.Request) (*hippocam.Response, error) {
	b.mu.Lock()
	broken := req.Role == b.role && b.seen < b.bad
	if req.Role == b.role {
		b.seen++
	}
	b.mu.Unlock()
	if broken {
		return &hippocam.Response{Message: hippocam.Message{Role: hippocam.RoleAssistant, Content: b.answer}, FinishReason: "stop"}, nil
	}
	return b.Model.Complete(ctx, req)
}

func TestContractViolations(t *testing.T) {
	const seed = "## L1: use currency = eur\n- decision: report in euros\n- when: revenue\n"
	tests := []struct {
		name   string
		role   hippocam.CallRole
		answer string
		// outcomes are the attempts; the seeded lesson makes the consolidator take part.
		outcomes []string
	}{
		{"JudgeNotJSON", hippocam.CallJudge, "The attempt looks fine to me.", []string{"all wrong"}},
		{"JudgeUnknownVerdict", hippocam.CallJudge, `{"verdict":"maybe","diagnosis":"","reflection":""}`, []string{"all wrong"}},
		{"JudgeSurpriseWithoutReflection", hippocam.CallJudge, `{"verdict":"surprise","diagnosis":"wrong","reflection":""}`, []string{"all wrong"}},
		{"InductorUnknownField", hippocam.CallInductor, `{"candidates":[],"notes":"none"}`, []string{"all wrong"}},
		{"InductorInventsAnOption", hippocam.CallInductor,
			`{"candidates":[{"kind":"use","key":"status_filter","value":"archived","decision":"take archived","when":["revenue"],"not_when":[],"evidence":"0 of 1 ok"}]}`,
			[]string{"all wrong"}},
		{"InductorContradictoryConditions", hippocam.CallInductor,
			`{"candidates":[{"kind":"avoid","key":"status_filter","value":"all","decision":"skip all","when":["revenue"],"not_when":["revenue"],"evidence":"0 of 1 ok"}]}`,
			[]string{"all wrong"}},
		{"LessonsAddsSomethingElse", hippocam.CallLessons,
			`{"action":"add","duplicate_of":0,"add":[{"kind":"use","key":"region","value":"eu","decision":"d","when":[],"not_when":[],"evidence":"e"}],"delete":[],"reason":"r"}`,
			[]string{"all wrong"}},
		{"LessonsDeletesUnshown", hippocam.CallLessons,
			`{"action":"conflict","duplicate_of":0,"add":[{"kind":"avoid","key":"status_filter","value":"all","decision":"d","when":["revenue","weekly"],"not_when":[],"evidence":"e"}],"delete":[{"number":7,"reason":"r"}],"reason":"r"}`,
			[]string{"all wrong"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cleanEnv, _ := newEnv(t)
			state := seeded(t, seed)
			want := mustUpdate(t, lessons.New(cleanEnv), state, attempts("sales", salesTask, tt.outcomes...))

			t.Run("Repaired", func(t *testing.T) {
				env, _ := newEnv(t)
				env.Model = &breaking{Model: env.Model, role: tt.role, answer: tt.answer, bad: 1}
				got := mustUpdate(t, lessons.New(env), state, attempts("sales", salesTask, tt.outcomes...))
				if !bytes.Equal(got, want) {
					t.Fatalf("after a repaired answer the state differs:\n%s\nwant:\n%s", got, want)
				}
			})
			t.Run("GivenUp", func(t *testing.T) {
				env, _ := newEnv(t)
				b := &breaking{Model: env.Model, role: tt.role, answer: tt.answer, bad: 1 << 20}
				env.Model = b
				before := bytes.Clone(state)
				got, err := lessons.New(env).Update(t.Context(), state, attempts("sales", salesTask, tt.outcomes...))
				if !errors.Is(err, learn.ErrGaveUp) || got != nil {
					t.Fatalf("Update = %.100s, %v; want no state and an error wrapping ErrGaveUp", got, err)
				}
				if !bytes.Equal(state, before) {
					t.Fatal("the failed update changed the state it was given")
				}
				if b.seen != 3 {
					t.Errorf("%d %s calls; want the first and two corrections", b.seen, tt.role)
				}
			})
		})
	}
}

func TestModelErrorLeavesStateAlone(t *testing.T) {
	env, _ := newEnv(t)
	env.Model = failing{}
	state := seeded(t, "## L1: use currency = eur\n- decision: d\n")
	got, err := lessons.New(env).Update(t.Context(), state, attempts("sales", salesTask, "all wrong"))
	if err == nil || errors.Is(err, learn.ErrGaveUp) || got != nil {
		t.Fatalf("Update = %.100s, %v; want the model's error and no state", got, err)
	}
}

type failing struct{}

func (failing) Complete(context.Context, *hippocam.Request) (*hippocam.Response, error) {
	return nil, hippocam.Errorf(hippocam.EUNAVAILABLE, "the model is down")
}
