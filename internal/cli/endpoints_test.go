package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam/sim"
)

// Through the real binaries (serve in front of sim, with either upstream format): the routes
// Hippocam does not serve reach the simulated model (a model by id, embeddings, and an unknown
// route's 404 as the upstream wrote it), and count_tokens counts what the next request then
// sends upstream.
func TestServeEndpoints(t *testing.T) {
	simAddr := freeAddr(t)
	startSim(t, simAddr, sim.Latency{})
	for _, format := range []string{"openai", "anthropic"} {
		t.Run(format, func(t *testing.T) {
			addr := freeAddr(t)
			start(t, "http://"+addr+"/healthz", "serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "serve.db"),
				"--upstream", "http://"+simAddr+"/v1", "--upstream-format", format, "--model", "hippocam-sim")
			base := "http://" + addr
			call := func(method, path, body string) (int, string) {
				t.Helper()
				req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			for _, c := range []struct {
				method, path, body string
				status             int
				want               string
			}{
				{"GET", "/v1/models/hippocam-sim", "", 200, `"id":"hippocam-sim"`},
				{"POST", "/v1/embeddings", `{"model":"hippocam-sim","input":["a","b"]}`, 200, `"object":"embedding"`},
				{"POST", "/v1/completions", `{"model":"hippocam-sim","prompt":"x"}`, 404, "no route for POST /v1/completions"},
			} {
				if status, body := call(c.method, c.path, c.body); status != c.status || !strings.Contains(body, c.want) {
					t.Errorf("%s %s: %d %s, want %d with %s", c.method, c.path, status, body, c.status, c.want)
				}
			}
			msgs := `"model":"hippocam-sim","system":"Be brief.","messages":[{"role":"user","content":"!say counted"}]`
			status, body := call("POST", "/v1/messages/count_tokens", `{`+msgs+`}`)
			var count struct {
				InputTokens int `json:"input_tokens"`
			}
			if status != 200 || json.Unmarshal([]byte(body), &count) != nil || count.InputTokens == 0 {
				t.Fatalf("count_tokens: %d %s", status, body)
			}
			status, body = call("POST", "/v1/messages", `{"max_tokens":50,`+msgs+`}`)
			var answer struct {
				Usage struct {
					Input     int `json:"input_tokens"`
					CacheRead int `json:"cache_read_input_tokens"`
				} `json:"usage"`
			}
			if status != 200 || json.Unmarshal([]byte(body), &answer) != nil || answer.Usage.Input+answer.Usage.CacheRead != count.InputTokens {
				t.Fatalf("counted %d, the upstream received: %d %s", count.InputTokens, status, body)
			}
		})
	}
}

// The official OpenAI and Anthropic Node clients on those routes (httpapi/testdata/node/
// endpoints.mjs): a stored response read back, both token counts, compaction and the request
// after it continuing the same session, a model and embeddings passed through.
func TestServeEndpointsNodeSDK(t *testing.T) {
	node, dir := nodeHarness(t)
	simAddr, addr := freeAddr(t), freeAddr(t)
	startSim(t, simAddr, sim.Latency{})
	start(t, "http://"+addr+"/healthz", "serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "sdk.db"), "--upstream", "http://"+simAddr+"/v1", "--model", "hippocam-sim")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "endpoints.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HIPPOCAM_BASE_URL=http://"+addr+"/v1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("endpoints.mjs failed: %v\n%s", err, out)
	}
}
