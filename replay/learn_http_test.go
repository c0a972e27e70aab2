package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/bench/learnstream"
	"github.com/hippocam/hippocam/internal/servetest"
	"github.com/hippocam/hippocam/sqlite"
)

// A stream of tasks (docs/sim.md part 2) driven over HTTP through `hippocam serve --learn
// routed`, one session per task, each ended by its outcome, as an agent and its harness would:
// the rewards come within a few points of `hippocam learn`'s routed-cl on the same stream, in
// process. A second tenant sees none of the first tenant's clusters.
//
// It runs on the decision stream and on the numeric one (docs/sim.md part 3: the numeric
// clusters are configured on their first reuse and fed by the extractor, through the proxy as
// in process).
func TestLearnThroughTheProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	if p := os.Getenv("HIPPOCAM_LEARN_STREAM"); p != "" {
		learnThroughTheProxy(t, p) // e.g. a stream `hippocam bench learn --out` wrote
		return
	}
	for name, path := range map[string]string{"decisions": "../bench/learnstream/testdata/small.jsonl", "numeric": "../bench/learnstream/testdata/numeric.jsonl"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			learnThroughTheProxy(t, path)
		})
	}
}

func learnThroughTheProxy(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := learnstream.Read(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	want, err := learnstream.Run(context.Background(), tasks, learnstream.Config{Condition: "routed-cl", Attempts: 1, Window: 8000, Prices: hippocam.DefaultPrices})
	if err != nil {
		t.Fatal(err)
	}

	upstream := simServer(t, nil)
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	if err := os.WriteFile(keys, []byte("acme k-acme\nother k-other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := servetest.FreeAddr(t)
	cmd := exec.Command(hippocamBin(t), "serve", "--addr", addr, "--db", filepath.Join(dir, "learn.db"), "--keys", keys,
		"--upstream", upstream.URL+"/v1", "--context-window", "8000", "--model", "hippocam-sim", "--learn", "routed",
		"--route-wait", "0") // every first answer waits for its routing, as in process: the rewards compare request for request
	log := &servetest.Log{}
	cmd.Env, cmd.Stdout, cmd.Stderr = servetest.Env("HIPPOCAM_", "OPENAI_"), log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); <-exited })
	root := "http://" + addr
	if !servetest.Healthy(root+"/healthz", exited) {
		t.Fatalf("serve did not come up: %s", log.String())
	}
	call := func(method, path, key string, body any, header ...string) (int, http.Header, []byte) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, root+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+key)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, out
	}
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	var sum float64
	scored := 0
	for _, task := range tasks {
		var history []msg
		var answers []string
		for _, m := range task.Messages {
			history = append(history, msg{string(m.Role), m.Content})
			if m.Role != hippocam.RoleUser {
				continue
			}
			status, _, body := call("POST", "/v1/chat/completions", "k-acme",
				map[string]any{"model": "hippocam-sim", "seed": 1, "messages": history}, "Hippocam-Session", task.ID)
			if status != 200 {
				t.Fatalf("task %s: %d %s\n%s", task.ID, status, body, log.String())
			}
			var resp struct {
				Choices []struct {
					Message msg `json:"message"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(body, &resp); err != nil || len(resp.Choices) == 0 {
				t.Fatalf("task %s: %s", task.ID, body)
			}
			answers = append(answers, resp.Choices[0].Message.Content)
			history = append(history, resp.Choices[0].Message)
		}
		g := learnstream.Grade(&task, answers)
		feedback := g.Feedback
		if feedback == "" {
			feedback = "The task is done."
		}
		if status, _, body := call("POST", "/api/sessions/"+task.ID+"/outcome?wait=1", "k-acme",
			map[string]any{"feedback": feedback, "reward": g.Reward}); status != 200 && status != 202 {
			t.Fatalf("outcome %s: %d %s", task.ID, status, body)
		}
		if g.Scored {
			sum += g.Reward
			scored++
		}
	}
	got := sum / float64(scored)
	t.Logf("through the proxy: %.3f over %d scored tasks; in process (routed-cl): %.3f", got, scored, want.MeanReward)
	if math.Abs(got-want.MeanReward) > 0.05 {
		t.Errorf("reward through the proxy %.3f, in process %.3f: more than a few points apart", got, want.MeanReward)
	}
	if got <= 0.3 {
		t.Errorf("reward %.3f: the proxy did not learn", got)
	}
	// Eight tasks of one family at once, ended at once, on one cluster: every update lands.
	family := tasks[1].Messages[len(tasks[1].Messages)-1].Content
	var cluster string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			id := fmt.Sprintf("par-%d", i)
			status, header, body := call("POST", "/v1/chat/completions", "k-acme",
				map[string]any{"model": "hippocam-sim", "seed": 1, "messages": []msg{{"user", family}}}, "Hippocam-Session", id)
			if status != 200 {
				t.Errorf("%s: %d %s", id, status, body)
				return
			}
			mu.Lock()
			if c := header.Get("Hippocam-Cluster"); cluster == "" {
				cluster = c
			} else if c != cluster {
				t.Errorf("%s went to cluster %s, the others to %s", id, c, cluster)
			}
			mu.Unlock()
			if status, _, body := call("POST", "/api/sessions/"+id+"/outcome?wait=1", "k-acme", map[string]any{"feedback": "The task is done."}); status != 200 {
				t.Errorf("outcome %s: %d %s", id, status, body)
			}
		})
	}
	wg.Wait()
	// The other tenant: a task of the same kind is routed among its own clusters only.
	status, header, body := call("POST", "/v1/chat/completions", "k-other",
		map[string]any{"model": "hippocam-sim", "seed": 1, "messages": []msg{{"user", family}}}, "Hippocam-Session", "b1", "Hippocam-Cluster", cluster)
	if status != 200 || header.Get("Hippocam-Cluster") == cluster {
		t.Fatalf("other tenant, pinning acme's cluster %s: %d, cluster %q: %s", cluster, status, header.Get("Hippocam-Cluster"), body)
	}
	// Deleting a session removes it from its cluster.
	if status, _, body := call("DELETE", "/api/sessions/par-0", "k-acme", nil); status != 204 {
		t.Fatalf("delete: %d %s", status, body)
	}
	cmd.Process.Signal(os.Interrupt)
	<-exited
	exited <- nil // for the cleanup
	db := sqlite.New(filepath.Join(dir, "learn.db"))
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.Cluster(context.Background(), "acme", cluster)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 8; i++ {
		if !c.HasApplied(fmt.Sprintf("par-%d", i)) {
			t.Errorf("par-%d's update did not land", i)
		}
	}
	if c.HasApplied("par-0") {
		t.Error("the deleted session still feeds its cluster")
	}
	theirs, _ := db.Clusters(context.Background(), "other")
	for _, oc := range theirs {
		if oc.ID == cluster || oc.Trajectories != 0 {
			t.Errorf("tenant other holds %+v", oc)
		}
	}
}
