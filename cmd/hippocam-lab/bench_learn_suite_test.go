package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/bench"
	"github.com/hippocam/hippocam/bench/learnstream"
)

// TestBenchLearnWriteStream: `bench learn --suite numeric --write-stream FILE` writes the
// generated stream, which `hippocam learn --stream` reads, and runs nothing.
func TestBenchLearnWriteStream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "numeric.jsonl")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"bench", "learn", "--suite", "numeric", "--seed", "5", "--tasks", "30", "--write-stream", path}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("a stream written, yet a report printed: %q", stdout.String())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := bench.LearnStreamData(bench.SuiteNumeric, 5, 30)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, want) {
		t.Error("the file is not the numeric stream of seed 5")
	}
	tasks, err := learnstream.Read(bytes.NewReader(data))
	if err != nil || len(tasks) != 30 {
		t.Fatalf("the stream reads back as %d tasks, %v", len(tasks), err)
	}
	if !strings.Contains(stderr.String(), "wrote "+path) {
		t.Errorf("stderr %q does not name the file", stderr.String())
	}
}

func TestBenchLearnSuiteErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{"ErrUnknownSuite", []string{"bench", "learn", "--suite", "poetry"}, `unknown suite "poetry"`},
		{"ErrTooFewNumericTasks", []string{"bench", "learn", "--suite", "numeric", "--tasks", "4"}, "tasks: at least 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tc.args, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tc.err) {
				t.Fatalf("exit %d, want 2; stderr %q lacks %q", code, stderr.String(), tc.err)
			}
		})
	}
}
