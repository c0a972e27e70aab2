package hippocam_test

import (
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
)

func stack(labels ...string) hippocam.IntentStack {
	var s hippocam.IntentStack
	for i, l := range labels {
		s = append(s, hippocam.Intent{Label: l, Done: "done", Start: "m" + string(rune('1'+i))})
	}
	return s
}

func closes(labels ...string) []hippocam.Closure {
	var c []hippocam.Closure
	for _, l := range labels {
		c = append(c, hippocam.Closure{Label: l})
	}
	return c
}

func TestIntentStackApply(t *testing.T) {
	open := func(label, done string) hippocam.Intent { return hippocam.Intent{Label: label, Done: done} }
	tests := []struct {
		name    string
		stack   hippocam.IntentStack
		ops     hippocam.StackOps
		want    []string
		closed  []string
		wantErr string
	}{
		{name: "OK/Skip", stack: stack("A"), want: []string{"A"}},
		{name: "OK/OpenBroadestFirst", ops: hippocam.StackOps{Open: []hippocam.Intent{open("A", "x"), open("B", "y")}}, want: []string{"A", "B"}},
		{name: "OK/CloseTop", stack: stack("A", "B"), ops: hippocam.StackOps{Close: closes("B")}, want: []string{"A"}, closed: []string{"B"}},
		{name: "OK/CloseCascade", stack: stack("A", "B", "C"), ops: hippocam.StackOps{Close: closes("C", "B", "A")}, closed: []string{"C", "B", "A"}},
		{name: "OK/Shift", stack: stack("A", "B"), ops: hippocam.StackOps{Close: closes("B"), Open: []hippocam.Intent{open("C", "z")}}, want: []string{"A", "C"}, closed: []string{"B"}},
		{name: "OK/ReopenClosedLabel", stack: stack("A", "B"), ops: hippocam.StackOps{Close: closes("B"), Open: []hippocam.Intent{open("B", "again")}}, want: []string{"A", "B"}, closed: []string{"B"}},
		{name: "ErrParentBeforeChild", stack: stack("A", "B"), ops: hippocam.StackOps{Close: closes("A")}, wantErr: "close from the top"},
		{name: "ErrWrongLabel", stack: stack("A", "B"), ops: hippocam.StackOps{Close: closes("b")}, wantErr: "match exactly"},
		{name: "ErrCloseEmpty", ops: hippocam.StackOps{Close: closes("A")}, wantErr: "nothing left"},
		{name: "ErrCloseTwice", stack: stack("A"), ops: hippocam.StackOps{Close: closes("A", "A")}, wantErr: "nothing left"},
		{name: "ErrDuplicatePurpose", stack: stack("Fix the bug"), ops: hippocam.StackOps{Open: []hippocam.Intent{open(" fix  the BUG", "x")}}, wantErr: "already on the stack"},
		{name: "ErrDuplicateWithinOpens", ops: hippocam.StackOps{Open: []hippocam.Intent{open("A", "x"), open("A", "y")}}, wantErr: "already on the stack"},
		{name: "ErrEmptyLabel", ops: hippocam.StackOps{Open: []hippocam.Intent{open("  ", "x")}}, wantErr: "non-empty label"},
		{name: "ErrNoExitCondition", ops: hippocam.StackOps{Open: []hippocam.Intent{open("A", "")}}, wantErr: "exit condition"},
		{name: "ErrAllOrNothing", stack: stack("A", "B"), ops: hippocam.StackOps{Close: closes("B"), Open: []hippocam.Intent{open("A", "dup")}}, wantErr: "already on the stack"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append(hippocam.IntentStack(nil), tt.stack...)
			next, closed, err := tt.stack.Apply(tt.ops, "g1")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				if hippocam.ErrorCode(err) != hippocam.EINVALID {
					t.Fatalf("code = %s, want EINVALID", hippocam.ErrorCode(err))
				}
				if len(closed) != 0 || len(next) != len(before) {
					t.Fatalf("a rejected set changed the stack: %v", next.Labels())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(next.Labels(), ","); got != strings.Join(tt.want, ",") {
				t.Fatalf("stack = %q, want %q", got, strings.Join(tt.want, ","))
			}
			var got []string
			for _, c := range closed {
				got = append(got, c.Label)
			}
			if strings.Join(got, ",") != strings.Join(tt.closed, ",") {
				t.Fatalf("closed = %v, want %v", got, tt.closed)
			}
			for _, in := range next[len(tt.stack)-len(closed):] {
				if in.Start != "g1" {
					t.Fatalf("opened intent %q starts at %q, want g1", in.Label, in.Start)
				}
			}
			if strings.Join(tt.stack.Labels(), ",") != strings.Join(before.Labels(), ",") {
				t.Fatal("Apply modified its receiver")
			}
		})
	}
}

func TestParseRefTags(t *testing.T) {
	got := hippocam.ParseRefTags("[ref:r1] text [ref:m22@40] [ref:] [ref:bad one] [ref:r3]")
	want := "r1,m22@40,r3"
	if strings.Join(got, ",") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}
