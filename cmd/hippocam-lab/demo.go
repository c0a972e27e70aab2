package main

import (
	"bytes"
	"context"

	"github.com/hippocam/hippocam/internal/cli"
	"github.com/hippocam/hippocam/replay"
	"github.com/hippocam/hippocam/scenario"
	"github.com/hippocam/hippocam/scenarios"
)

// demoKit is what serve --demo runs on: a fresh in-process simulated model, and the bundled
// support-queue scenario replayed into session "demo" over HTTP, as an agent would, so that a
// newcomer finds a live session in the viewer.
var demoKit = &cli.DemoKit{Upstream: simClient, Replay: replayDemo}

// replayDemo replays the bundled support-queue scenario into the server at base (its /v1 root),
// every second step streamed.
func replayDemo(ctx context.Context, base, apiKey string) (int, error) {
	data, err := scenarios.FS.ReadFile("support.jsonl")
	if err != nil {
		return 0, err
	}
	lines, err := scenario.Parse(bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	rep, err := replay.RunHTTP(ctx, replay.HTTPConfig{BaseURL: base, Session: "demo", APIKey: apiKey, Stream: func(i int) bool { return i%2 == 1 }}, lines)
	if err != nil {
		return 0, err
	}
	return rep.Steps, nil
}
