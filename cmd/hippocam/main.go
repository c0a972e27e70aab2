// Command hippocam is Hippocam's product binary: the proxy, the MCP server, the
// conversation-memory benchmarks against a real endpoint and the offline check of recordings.
// The simulated model, the benchmarks, the offline learning runs, replay and serve --demo live
// in hippocam-lab; hippocam hands those command lines to it (delegate.go).
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hippocam/hippocam/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `hippocam: memory for long-running LLM agents (the Hippocam paper, in Go)

Usage:
  hippocam serve --upstream BASE_URL [--addr HOST:PORT] [--db PATH|postgres://…] [--context-window N] [--keys FILE] [--record DIR]
        the OpenAI-compatible proxy that gives any agent Hippocam memory, with REST API and viewer
  hippocam mcp --db PATH [--tenant NAME] [--learn routed --upstream BASE_URL]
        serve one tenant's memory, lessons and clusters over MCP on stdio (beside a running serve)
  hippocam eval --dataset FILE --upstream BASE_URL --model M [--conditions hippocam,full,truncate] [--context-window N] [--batch N] [--limit N] [--out DIR]
        conversation-memory benchmarks (LoCoMo, LongMemEval) with an LLM judge, against any endpoint
  hippocam check [--json] FILE
        run recorded JANUS, PALIM and PRECIP answers (a JSON array of cases, or a serve --record
        recording) through the engine's validators, offline
  hippocam version

Run by hippocam-lab (found next to this binary, on PATH, or built from this module's source):
  hippocam serve --demo
        the proxy, offline: the simulated model upstream and a bundled scenario replayed into it
  hippocam sim --addr HOST:PORT [--ttft-ms N] [--tokens-per-second R]
        serve the simulated OpenAI-compatible model
  hippocam replay --scenario FILE [--context-window N] [--db PATH] [--json]
        run a docs/sim.md scenario through the engine with the simulated model, offline
  hippocam bench context|overhead|learn …
        the context policies, the proxy's overhead, the learning conditions, offline
  hippocam learn --stream FILE [--conditions a,b] [--attempts N] [--json]
        run a task stream under each learning condition with the simulated model, offline

Run 'hippocam COMMAND -h' for a command's flags.
`

// labCommands are the commands hippocam hands to hippocam-lab.
var labCommands = []string{"sim", "bench", "learn", "replay"}

// Main runs the command line args and returns the process exit status: 0 on success, 2 for a
// usage error, 1 for any other failure, or hippocam-lab's status for the commands it runs.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	p := &cli.Program{Name: "hippocam", Usage: usage, Commands: cli.ProductCommands(), Delegated: labCommands, Delegate: runLab}
	return p.Main(ctx, args, stdout, stderr)
}
