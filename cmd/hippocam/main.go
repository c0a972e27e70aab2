// Command hippocam is Hippocam's binary: the memory engine, the simulated model and the tools
// around them, one subcommand each.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Command is one subcommand: it parses its flags, runs and releases what it opened.
type Command interface {
	ParseFlags(args []string) error
	Run(ctx context.Context) error
	Close() error
}

const usage = `hippocam: memory for long-running LLM agents (the Hippocam paper, in Go)

Usage:
  hippocam replay --scenario FILE [--context-window N] [--db PATH] [--json]
        run a docs/sim.md scenario through the engine with the simulated model, offline
  hippocam serve --upstream BASE_URL [--addr HOST:PORT] [--db PATH|postgres://…] [--context-window N] [--keys FILE] [--record DIR]
        the OpenAI-compatible proxy that gives any agent Hippocam memory, with REST API and viewer
  hippocam serve --demo
        the same, offline: the simulated model upstream and a bundled scenario replayed into it
  hippocam sim --addr HOST:PORT [--ttft-ms N] [--tokens-per-second R]
        serve the simulated OpenAI-compatible model
  hippocam bench context [--quick] [--json] [--out DIR] [--context-window N] [--seed N]
        compare Hippocam with the baseline context policies on generated workloads, offline
  hippocam bench overhead [--json] [--ttft-ms N --tokens-per-second R] [--steps N] [--provider-only]
        the proxy's added latency and throughput, and RECALL latency on the stores
  hippocam bench learn [--suite decisions|numeric] [--quick] [--json] [--out DIR] [--write-stream FILE]
        the learning conditions on generated task streams (decisions and facts, or numeric estimates), offline
  hippocam mcp --db PATH [--tenant NAME] [--learn routed --upstream BASE_URL]
        serve one tenant's memory, lessons and clusters over MCP on stdio (beside a running serve)
  hippocam learn --stream FILE [--conditions a,b] [--attempts N] [--context-window W] [--advisory-budget TOKENS] [--json]
        run a task stream under each learning condition with the simulated model, offline
  hippocam eval --dataset FILE --upstream BASE_URL --model M [--conditions hippocam,full,truncate] [--context-window N] [--batch N] [--limit N] [--out DIR]
        conversation-memory benchmarks (LoCoMo, LongMemEval) with an LLM judge, against any endpoint
  hippocam check [--json] FILE
        run recorded JANUS, PALIM and PRECIP answers (a JSON array of cases, or a serve --record
        recording) through the engine's validators, offline
  hippocam version

Run 'hippocam COMMAND -h' for a command's flags.
`

// Main runs the command line args and returns the process exit status: 0 on success, 2 for a
// usage error, 1 for any other failure.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var cmd Command
	switch args[0] {
	case "check":
		cmd = &CheckCommand{Stdout: stdout, Stderr: stderr}
	case "replay":
		cmd = &ReplayCommand{Stdout: stdout, Stderr: stderr}
	case "serve":
		cmd = &ServeCommand{Stdout: stdout, Stderr: stderr}
	case "sim":
		cmd = &SimCommand{Stdout: stdout, Stderr: stderr}
	case "bench":
		cmd = &BenchCommand{Stdout: stdout, Stderr: stderr}
	case "learn":
		cmd = &LearnCommand{Stdout: stdout, Stderr: stderr}
	case "mcp":
		cmd = &McpCommand{Stdout: stdout, Stderr: stderr}
	case "eval":
		cmd = &EvalCommand{Stdout: stdout, Stderr: stderr}
	case "version":
		fmt.Fprintln(stdout, "hippocam", Version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "hippocam: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err := cmd.ParseFlags(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "hippocam %s: %v\n", args[0], err)
		return 2
	}
	err := cmd.Run(ctx)
	if cerr := cmd.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintf(stderr, "hippocam %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// Version is the binary's version.
const Version = "0.1.0"
