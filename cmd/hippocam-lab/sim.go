package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai"

	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// SimCommand serves the simulated model (docs/sim.md) over HTTP until the context ends.
type SimCommand struct {
	Addr string
	// Latency is how slowly the model answers (--ttft-ms, --tokens-per-second); zero: at once.
	Latency sim.Latency
	// RefuseStructured makes the model refuse structured requests with a 400
	// (--refuse-structured; sim.Model.SetRefuseStructured).
	RefuseStructured bool
	Stdout, Stderr   io.Writer
	Ready            func(addr string) // called once the server listens (tests)
	ln               net.Listener
}

// ParseFlags reads the sim flags. A negative delay or rate is a usage error.
func (c *SimCommand) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("hippocam sim", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8081", "address to listen on")
	ttft := fs.Int("ttft-ms", 0, "milliseconds every response waits before its first byte")
	fs.BoolVar(&c.RefuseStructured, "refuse-structured", false, "refuse response_format json_schema and forced tool choices with a 400, as an upstream without structured output does")
	fs.Float64Var(&c.Latency.TokensPerSecond, "tokens-per-second", 0, "output tokens produced per second after the first byte, streamed or not (0: all at once)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	c.Latency.TTFT = time.Duration(*ttft) * time.Millisecond
	return c.Latency.Validate()
}

// Run serves until ctx is cancelled, then shuts down gracefully.
func (c *SimCommand) Run(ctx context.Context) error {
	tok, err := tokenizer.Default()
	if err != nil {
		return err
	}
	c.ln, err = net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	model := sim.New(tok)
	if err := model.SetLatency(c.Latency); err != nil {
		return err
	}
	model.SetRefuseStructured(c.RefuseStructured)
	srv := &http.Server{Handler: model.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(c.Stdout, "simulated model listening on http://%s/v1\n", c.ln.Addr())
	if !c.Latency.Zero() {
		fmt.Fprintf(c.Stdout, "latency: %v to first byte, then %g tokens per second\n", c.Latency.TTFT, c.Latency.TokensPerSecond)
	}
	if c.Ready != nil {
		c.Ready(c.ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(c.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close has nothing left to release: Run's shutdown closed the listener.
func (c *SimCommand) Close() error { return nil }

// simClient is the model-client configuration that talks to a fresh in-process simulated model,
// through the real wire client and no socket (replay, bench and serve --demo use it).
func simClient(tok hippocam.Tokenizer) openai.Config {
	return openai.Config{
		BaseURL:    "http://sim.local/v1",
		Model:      sim.ModelID,
		HTTPClient: &http.Client{Transport: sim.New(tok).Transport()},
		MaxRetries: 0,
	}
}
