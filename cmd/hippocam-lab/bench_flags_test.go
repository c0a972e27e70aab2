package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestBenchUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"ErrNoBenchmark", []string{"bench"}, 2, "which benchmark?"},
		{"ErrUnknownBenchmark", []string{"bench", "speed"}, 2, `unknown benchmark "speed"`},
		{"ErrOverheadStrayArgument", []string{"bench", "overhead", "extra"}, 2, "unexpected arguments"},
		{"ErrOverheadLearnMode", []string{"bench", "overhead", "--learn", "always"}, 2, `learning mode "always"`},
		{"ErrSmallWindow", []string{"bench", "context", "--context-window", "2000"}, 2, "too small"},
		{"ErrUnknownWorkload", []string{"bench", "context", "--workloads", "agentic,chat"}, 2, `unknown workload "chat"`},
		{"ErrStrayArgument", []string{"bench", "context", "extra"}, 2, "unexpected arguments"},
		{"ErrUnknownPolicy", []string{"bench", "context", "--quick", "--workloads", "fact-stream", "--policies", "nope"}, 1, `unknown policy "nope"`},
		{"Help", []string{"bench", "-h"}, 0, "bench context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.err) {
				t.Fatalf("exit %d, want %d; stderr %q lacks %q", code, tc.code, stderr.String(), tc.err)
			}
		})
	}
}
