// Package cli holds the commands of Hippocam's binaries and the dispatch they share. The product,
// cmd/hippocam, registers serve, mcp, eval and check; the lab, cmd/hippocam-lab, registers the
// simulated model, the benchmarks, the offline learning runs and replay, and serve again with the
// simulated upstream of --demo (DemoKit). Each binary is a Program: a table of commands.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
)

// Command is one subcommand: it parses its flags, runs and releases what it opened.
type Command interface {
	ParseFlags(args []string) error
	Run(ctx context.Context) error
	Close() error
}

// Factory makes a command that writes to stdout and stderr.
type Factory func(stdout, stderr io.Writer) Command

// Version is the binaries' version.
const Version = "0.1.0"

// ErrLab is returned by a command's ParseFlags when what its flags ask for lives in the lab
// binary (serve --demo without a DemoKit); a Program with a Delegate then hands it the command.
var ErrLab = errors.New("this runs in hippocam-lab")

// Program is one binary's command line: its commands, and those it hands to another binary.
type Program struct {
	// Name is the binary's name, in messages and in the version line.
	Name string
	// Usage is printed for help, and with a usage error.
	Usage string
	// Commands are the commands the binary runs itself, by name.
	Commands map[string]Factory
	// Delegated names the commands the binary runs through Delegate; Delegate also runs a
	// command whose ParseFlags returned ErrLab. Delegate gets the whole command line and returns
	// the exit status.
	Delegated []string
	Delegate  func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// ProductCommands are the commands of the product binary: the proxy, the MCP server, the
// conversation-memory benchmarks against a real endpoint, and the offline check of recordings.
// A serve they make has no DemoKit: its --demo is the lab's.
func ProductCommands() map[string]Factory {
	return map[string]Factory{
		"serve": func(stdout, stderr io.Writer) Command { return &ServeCommand{Stdout: stdout, Stderr: stderr} },
		"mcp":   func(stdout, stderr io.Writer) Command { return &McpCommand{Stdout: stdout, Stderr: stderr} },
		"eval":  func(stdout, stderr io.Writer) Command { return &EvalCommand{Stdout: stdout, Stderr: stderr} },
		"check": func(stdout, stderr io.Writer) Command { return &CheckCommand{Stdout: stdout, Stderr: stderr} },
	}
}

// Main runs the command line args and returns the process exit status: 0 on success, 2 for a
// usage error, 1 for any other failure, or the delegated binary's status.
func (p *Program) Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, p.Usage)
		return 2
	}
	switch args[0] {
	case "version":
		fmt.Fprintln(stdout, p.Name, Version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, p.Usage)
		return 0
	}
	if p.Delegate != nil && slices.Contains(p.Delegated, args[0]) {
		return p.Delegate(ctx, args, stdout, stderr)
	}
	newCmd, ok := p.Commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n%s", p.Name, args[0], p.Usage)
		return 2
	}
	cmd := newCmd(stdout, stderr)
	if err := cmd.ParseFlags(args[1:]); err != nil {
		switch {
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, ErrLab) && p.Delegate != nil:
			return p.Delegate(ctx, args, stdout, stderr)
		}
		fmt.Fprintf(stderr, "%s %s: %v\n", p.Name, args[0], err)
		return 2
	}
	err := cmd.Run(ctx)
	if cerr := cmd.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s %s: %v\n", p.Name, args[0], err)
		return 1
	}
	return 0
}
