package main

import (
	"github.com/hippocam/hippocam/internal/servetest"

	"encoding/json"
	"net/http"
	"testing"
	"time"
)

func freeAddr(t *testing.T) string { return servetest.FreeAddr(t) }

// start runs this binary's Main with args until the test ends, and waits for probe to answer.
func start(t *testing.T, probe string, args ...string) {
	t.Helper()
	servetest.StartMain(t, Main, probe, args...)
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
