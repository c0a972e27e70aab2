package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start runs the lab's Main with args until the test ends, and waits for probe to answer.
func start(t *testing.T, probe string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out bytes.Buffer
	go func() { done <- Main(ctx, args, &out, &out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("%s exited %d: %s", args[0], code, out.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not shut down", args[0])
		}
	})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if resp, err := http.Get(probe); err == nil {
			resp.Body.Close()
			return
		}
		select {
		case code := <-done:
			t.Fatalf("%s exited %d early: %s", args[0], code, out.String())
		case <-time.After(25 * time.Millisecond):
		}
	}
	t.Fatalf("%s did not come up", args[0])
}

// The first-run experience: serve --demo needs no key and no network, and a live session
// appears for the viewer.
func TestServeDemo(t *testing.T) {
	addr := freeAddr(t)
	start(t, "http://"+addr+"/healthz", "serve", "--demo", "--addr", addr, "--context-window", "8000")
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/api/sessions/demo")
		if err == nil {
			var s struct {
				Consolidations struct{ Intent, Prefix int } `json:"consolidations"`
			}
			json.NewDecoder(resp.Body).Decode(&s)
			resp.Body.Close()
			if s.Consolidations.Prefix > 0 {
				page, err := http.Get("http://" + addr + "/")
				if err != nil || page.StatusCode != 200 {
					t.Fatalf("viewer: %v %v", err, page.Status)
				}
				page.Body.Close()
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the demo session did not fold within 90 s")
}
