// Command hippocam-lab is Hippocam's laboratory: the simulated model, the benchmarks, the offline
// learning runs, scenario replay and serve --demo, the proxy in front of an in-process simulated
// model. None of it is linked into the product binary, hippocam, which hands these command lines
// to hippocam-lab (so `hippocam bench …` keeps working).
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

const usage = `hippocam-lab: Hippocam's simulated model, benchmarks and offline runs (hippocam runs these
command lines through it too: 'hippocam bench …' is 'hippocam-lab bench …')

Usage:
  hippocam-lab serve --demo
        the proxy, offline: the simulated model upstream and a bundled scenario replayed into it
        (serve takes every flag of 'hippocam serve')
  hippocam-lab sim --addr HOST:PORT [--ttft-ms N] [--tokens-per-second R]
        serve the simulated OpenAI-compatible model
  hippocam-lab replay --scenario FILE [--context-window N] [--db PATH] [--json]
        run a docs/sim.md scenario through the engine with the simulated model, offline
  hippocam-lab bench context [--quick] [--json] [--out DIR] [--context-window N] [--seed N]
        compare Hippocam with the baseline context policies on generated workloads, offline
  hippocam-lab bench overhead [--json] [--ttft-ms N --tokens-per-second R] [--steps N] [--provider-only]
        the proxy's added latency and throughput, and RECALL latency on the stores
  hippocam-lab bench learn [--suite decisions|numeric] [--quick] [--json] [--out DIR] [--write-stream FILE]
        the learning conditions on generated task streams (decisions and facts, or numeric estimates), offline
  hippocam-lab learn --stream FILE [--conditions a,b] [--attempts N] [--context-window W] [--advisory-budget TOKENS] [--json]
        run a task stream under each learning condition with the simulated model, offline
  hippocam-lab version

Run 'hippocam-lab COMMAND -h' for a command's flags.
`

// commands are the lab's commands: serve is the product's, with the demo kit set.
func commands() map[string]cli.Factory {
	return map[string]cli.Factory{
		"serve": func(stdout, stderr io.Writer) cli.Command {
			return &cli.ServeCommand{Stdout: stdout, Stderr: stderr, DemoKit: demoKit}
		},
		"sim":    func(stdout, stderr io.Writer) cli.Command { return &SimCommand{Stdout: stdout, Stderr: stderr} },
		"bench":  func(stdout, stderr io.Writer) cli.Command { return &BenchCommand{Stdout: stdout, Stderr: stderr} },
		"learn":  func(stdout, stderr io.Writer) cli.Command { return &LearnCommand{Stdout: stdout, Stderr: stderr} },
		"replay": func(stdout, stderr io.Writer) cli.Command { return &ReplayCommand{Stdout: stdout, Stderr: stderr} },
	}
}

// Main runs the command line args and returns the process exit status: 0 on success, 2 for a
// usage error, 1 for any other failure.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	p := &cli.Program{Name: "hippocam-lab", Usage: usage, Commands: commands()}
	return p.Main(ctx, args, stdout, stderr)
}
