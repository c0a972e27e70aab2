package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// StartServe runs the `serve` command in-process with args, on a free loopback port, with a
// SQLite file in a temporary directory, no keys and its log on log; apiKey, when not nil,
// replaces the upstream key serve would read from the environment. It returns the root URL and
// the function that stops the server and removes the directory.
func StartServe(ctx context.Context, log io.Writer, apiKey *string, args ...string) (string, func() error, error) {
	dir, err := os.MkdirTemp("", "hippocam-serve-")
	if err != nil {
		return "", nil, err
	}
	cmd := &ServeCommand{Stdout: io.Discard, Stderr: log}
	err = cmd.ParseFlags(append([]string{"--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "hippocam.db"), "--keys", ""}, args...))
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	if apiKey != nil {
		cmd.APIKey = *apiKey
	}
	ready := make(chan string, 1)
	cmd.Ready = func(addr string) { ready <- addr }
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cmd.Run(ctx) }()
	stop := func() error {
		cancel()
		err := <-done
		if cerr := cmd.Close(); err == nil {
			err = cerr
		}
		os.RemoveAll(dir)
		return err
	}
	select {
	case addr := <-ready:
		return "http://" + addr, stop, nil
	case err := <-done:
		cancel()
		cmd.Close()
		os.RemoveAll(dir)
		if err == nil {
			err = fmt.Errorf("the proxy stopped before it listened")
		}
		return "", nil, err
	}
}
