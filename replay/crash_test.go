package replay_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/servetest"
	"github.com/hippocam/hippocam/internal/testenv"
	"github.com/hippocam/hippocam/sessions"
	"github.com/hippocam/hippocam/sqlite"
)

// Kill -9 at random moments: while an answer streams, between an answer and its consolidation,
// during a consolidation job. The agent resends what it had not got an answer for, marked as a
// retry, as the official SDKs do. At the end nothing it was answered is lost, the tree holds its
// whole conversation in order, no consolidation is half-applied, and a restarted server finishes
// the jobs a killed one left. A crash rig: it runs in the long step (internal/testenv).
func TestLongKillNine(t *testing.T) {
	testenv.SkipUnlessLong(t)
	if testing.Short() {
		t.Skip("builds and kills the binary many times")
	}
	// A simulated upstream that takes its time, so that kills land inside calls.
	h := simServer(t, nil).Config.Handler
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(9, 9))
	upstream := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		d := time.Duration(rng.IntN(120)) * time.Millisecond
		mu.Unlock()
		time.Sleep(d)
		h.ServeHTTP(w, r)
	}))
	dir := t.TempDir()
	db := filepath.Join(dir, "crash.db")
	srv := &killable{t: t, bin: hippocamBin(t), addr: servetest.FreeAddr(t),
		args: []string{"--db", db, "--upstream", upstream + "/v1", "--context-window", "4000", "--model", "hippocam-sim", "--job-lease", "1s"}}
	srv.start()

	agent := &crashAgent{root: "http://" + srv.addr, session: "crash"}
	kills := 0
	for turn := 0; turn < 60; turn++ {
		msg := crashTurn(turn, agent.pendingCalls())
		agent.history = append(agent.history, msg...)
		retry := 0
		for {
			// A kill at a random moment of this request or of the consolidation after it.
			var killed chan struct{}
			if kills < 10 && turn%5 == 2 {
				killed = srv.killAfter(time.Duration(20+rng.IntN(400)) * time.Millisecond)
			}
			answer, err := agent.send(turn%2 == 1, retry)
			if killed != nil {
				<-killed
				kills++
				srv.start()
			}
			if err == nil {
				agent.history = append(agent.history, answer)
				break
			}
			if retry++; retry > 5 {
				t.Fatalf("turn %d: %v", turn, err)
			}
		}
	}
	// A kill right after the last answer, most likely during its consolidation; the restarted
	// server takes the job over when the dead one's lease has run out.
	time.Sleep(30 * time.Millisecond)
	srv.kill()
	srv.start()
	time.Sleep(4 * time.Second)
	srv.stop()
	if kills < 5 {
		t.Fatalf("only %d kills landed", kills)
	}

	st := sqlite.New(db)
	if err := st.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if n, err := st.QueuedJobs(ctx); err != nil || n != 0 {
		t.Fatalf("%d jobs still queued (%v): the restarted server did not finish them", n, err)
	}
	s, err := st.Session(ctx, "", "crash")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Pending.Empty() {
		t.Fatalf("consolidation still pending: %+v", s.Pending)
	}
	if s.Consolidations.Intent == 0 || s.Consolidations.Prefix == 0 {
		t.Fatalf("consolidations %+v: the run never consolidated both ways", s.Consolidations)
	}
	got, err := sessions.Transcript(ctx, hippocam.SessionArchive(st, "", "crash"), s.Context)
	if err != nil {
		t.Fatalf("the tree cannot be read whole: %v", err)
	}
	if len(got) != len(agent.history) {
		t.Fatalf("the tree holds %d messages of the conversation, the agent sent and got %d", len(got), len(agent.history))
	}
	for i := range got {
		if d := sameTurnMessage(got[i], agent.history[i]); d != "" {
			t.Fatalf("message %d: %s", i, d)
		}
	}
	t.Logf("%d kills; %d messages; consolidations %+v", kills, len(got), s.Consolidations)
}

// crashTurn is the agent's next input: the results of the last answer's calls, or a user
// message that opens or closes intents, states facts, reads large files or asks.
func crashTurn(turn int, pending []hippocam.ToolCall) []hippocam.Message {
	if len(pending) > 0 {
		out := make([]hippocam.Message, len(pending))
		for i, c := range pending {
			out[i] = hippocam.Message{Role: hippocam.RoleTool, ToolCallID: c.ID,
				Content: fmt.Sprintf("detail d%d := v%d\n%s", turn, turn, strings.Repeat(fmt.Sprintf("line %d of the file read at turn %d. ", turn, turn), 40))}
		}
		return out
	}
	var text string
	switch turn % 8 {
	case 0:
		text = fmt.Sprintf("#open Task %d | task %d is done\n!say starting", turn, turn)
	case 1:
		text = fmt.Sprintf(`!call read_file {"path":"f%d"}`, turn)
	case 4:
		text = fmt.Sprintf("k%d := w%d\n!say noted", turn, turn)
	case 6:
		text = fmt.Sprintf("#close Task %d\n!say closed", turn-6)
	default:
		text = fmt.Sprintf("!ask k%d", max(0, turn-4))
	}
	return []hippocam.Message{{Role: hippocam.RoleUser, Content: text}}
}

// sameTurnMessage compares what the tree keeps of a message with what the agent had.
func sameTurnMessage(got, want hippocam.Message) string {
	if got.Role != want.Role || got.Content != want.Content || got.ToolCallID != want.ToolCallID || len(got.ToolCalls) != len(want.ToolCalls) {
		return fmt.Sprintf("%s %q, want %s %q", got.Role, clipText(got.Content), want.Role, clipText(want.Content))
	}
	for i := range got.ToolCalls {
		g, w := got.ToolCalls[i], want.ToolCalls[i]
		if g.ID != w.ID || g.Name != w.Name || g.Arguments != w.Arguments {
			return fmt.Sprintf("tool call %d: %+v, want %+v", i, g, w)
		}
	}
	return ""
}

func clipText(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// crashAgent is an agent that resends its whole history, streamed or not.
type crashAgent struct {
	root, session string
	history       []hippocam.Message
}

func (a *crashAgent) pendingCalls() []hippocam.ToolCall {
	if n := len(a.history); n > 0 && a.history[n-1].Role == hippocam.RoleAssistant {
		return a.history[n-1].ToolCalls
	}
	return nil
}

// send posts the history and returns the answer; retry > 0 marks a transport retry.
func (a *crashAgent) send(stream bool, retry int) (hippocam.Message, error) {
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	type msg struct {
		Role       string `json:"role"`
		Content    string `json:"content"`
		ToolCalls  []call `json:"tool_calls,omitempty"`
		ToolCallID string `json:"tool_call_id,omitempty"`
	}
	msgs := make([]msg, len(a.history))
	for i, m := range a.history {
		msgs[i] = msg{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			var wc call
			wc.ID, wc.Type, wc.Function.Name, wc.Function.Arguments = c.ID, "function", c.Name, c.Arguments
			msgs[i].ToolCalls = append(msgs[i].ToolCalls, wc)
		}
	}
	body, _ := json.Marshal(map[string]any{"model": "hippocam-sim", "messages": msgs, "stream": stream,
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "read_file", "parameters": map[string]any{"type": "object"}}}}})
	req, _ := http.NewRequest("POST", a.root+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Hippocam-Session", a.session)
	if retry > 0 {
		req.Header.Set("X-Stainless-Retry-Count", fmt.Sprint(retry))
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return hippocam.Message{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return hippocam.Message{}, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	answer := hippocam.Message{Role: hippocam.RoleAssistant}
	if !stream {
		var out struct {
			Choices []struct {
				Message msg `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) == 0 {
			return hippocam.Message{}, fmt.Errorf("unreadable answer: %v", err)
		}
		m := out.Choices[0].Message
		answer.Content = m.Content
		for _, c := range m.ToolCalls {
			answer.ToolCalls = append(answer.ToolCalls, hippocam.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		return answer, nil
	}
	// A stream counts only when it ended properly: an answer cut short is no answer.
	var text strings.Builder
	calls := map[int]*hippocam.ToolCall{}
	done := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			break
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			return hippocam.Message{}, err
		}
		if chunk.Error != nil {
			return hippocam.Message{}, fmt.Errorf("stream error: %s", chunk.Error)
		}
		for _, ch := range chunk.Choices {
			text.WriteString(ch.Delta.Content)
			for _, tc := range ch.Delta.ToolCalls {
				c := calls[tc.Index]
				if c == nil {
					c = &hippocam.ToolCall{}
					calls[tc.Index] = c
				}
				if tc.ID != "" {
					c.ID = tc.ID
				}
				c.Name += tc.Function.Name
				c.Arguments += tc.Function.Arguments
			}
		}
	}
	if !done {
		return hippocam.Message{}, fmt.Errorf("the stream ended early: %v", sc.Err())
	}
	answer.Content = text.String()
	for i := 0; i < len(calls); i++ {
		answer.ToolCalls = append(answer.ToolCalls, *calls[i])
	}
	return answer, nil
}

// killable runs `hippocam serve` as a process that can be killed and started again on the same
// address and database.
type killable struct {
	t      *testing.T
	bin    string
	addr   string
	args   []string
	cmd    *exec.Cmd
	exited chan error
	log    *servetest.Log
}

func (k *killable) start() {
	k.t.Helper()
	k.log = &servetest.Log{}
	cmd := exec.Command(k.bin, append([]string{"serve", "--addr", k.addr}, k.args...)...)
	cmd.Env, cmd.Stdout, cmd.Stderr = servetest.Env("HIPPOCAM_", "OPENAI_"), k.log, k.log
	if err := cmd.Start(); err != nil {
		k.t.Fatal(err)
	}
	k.cmd, k.exited = cmd, make(chan error, 1)
	go func() { k.exited <- cmd.Wait() }()
	if !servetest.Healthy("http://"+k.addr+"/healthz", k.exited) {
		k.t.Fatalf("hippocam serve did not come up: %s", k.log.String())
	}
	k.t.Cleanup(func() {
		if k.cmd == cmd {
			k.kill()
		}
	})
}

// kill sends SIGKILL and waits for the process to be gone.
func (k *killable) kill() {
	if k.cmd == nil {
		return
	}
	k.cmd.Process.Kill()
	<-k.exited
	k.cmd = nil
}

// killAfter kills the process after d, and closes the channel it returns once it is gone.
func (k *killable) killAfter(d time.Duration) chan struct{} {
	done := make(chan struct{})
	go func() {
		time.Sleep(d)
		k.kill()
		close(done)
	}()
	return done
}

// stop shuts the process down gracefully.
func (k *killable) stop() {
	k.cmd.Process.Signal(os.Interrupt)
	select {
	case <-k.exited:
	case <-time.After(30 * time.Second):
		k.t.Errorf("hippocam serve did not shut down: %s", k.log.String())
		k.cmd.Process.Kill()
		<-k.exited
	}
	k.cmd = nil
}

// newServer serves h on a loopback port until the test ends and returns its URL.
func newServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
