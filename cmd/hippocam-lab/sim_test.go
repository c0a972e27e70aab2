package main

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// The sim's latency flags: read into its latency model, and a negative value is a usage error
// (exit 2) before anything listens.
func TestSimFlags(t *testing.T) {
	c := &SimCommand{Stderr: &bytes.Buffer{}}
	if err := c.ParseFlags([]string{"--ttft-ms", "250", "--tokens-per-second", "40"}); err != nil {
		t.Fatal(err)
	}
	if c.Latency.TTFT != 250*time.Millisecond || c.Latency.TokensPerSecond != 40 {
		t.Fatalf("latency %+v", c.Latency)
	}
	for _, args := range [][]string{{"--ttft-ms", "-3"}, {"--tokens-per-second", "-1"}} {
		var out bytes.Buffer
		if code := Main(context.Background(), append([]string{"sim", "--addr", "127.0.0.1:0"}, args...), &out, &out); code != 2 {
			t.Errorf("sim %v exited %d, want 2: %s", args, code, out.String())
		}
	}
}
