package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam/internal/servetest"
	"github.com/hippocam/hippocam/sim"
)

// recLine is what the test reads of a recorded line.
type recLine struct {
	Time     time.Time       `json:"time"`
	Tenant   string          `json:"tenant"`
	Session  string          `json:"session"`
	Role     string          `json:"role"`
	Attempt  int             `json:"attempt"`
	Tries    int             `json:"tries"`
	Stream   bool            `json:"stream"`
	Request  json.RawMessage `json:"request"`
	Response *struct {
		Content string `json:"content"`
	} `json:"response"`
	Error       string  `json:"error"`
	LatencyMS   float64 `json:"latency_ms"`
	TTFBMS      float64 `json:"ttfb_ms"`
	FirstTextMS float64 `json:"first_text_ms"`
	Usage       struct {
		Input, Output int
	} `json:"usage"`
	Problems []string `json:"problems"`
	Case     *struct {
		ID     string `json:"id"`
		Role   string `json:"role"`
		Answer string `json:"answer"`
		Span   []int  `json:"span"`
	} `json:"case"`
}

func readRecording(t *testing.T, path string) []recLine {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []recLine
	for i, l := range bytes.Split(bytes.TrimRight(raw, "\n"), []byte("\n")) {
		var r recLine
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, clip(string(l)))
		}
		out = append(out, r)
	}
	return out
}

// A session through the built binary's serve --record, in front of the built binary's sim:
// every exchange with the upstream is a line of the session's file (the main model's, plain and
// streamed, and JANUS's and PRECIP's, the latter in a job after the answer), with usage and
// latency; a JANUS answer the engine refused carries the problems it quoted back; `hippocam
// check` on the file refuses exactly those cases; the viewer's session links the file, served
// to its tenant only; no key reaches the file; deleting the session deletes the file.
func TestServeRecordEndToEnd(t *testing.T) {
	bin := hippocamBuild.Bin(t)
	simAddr := servetest.FreeAddr(t)
	startSim(t, simAddr, sim.Latency{})

	const (
		upstreamKey = "sk-upstream-secret-4711"
		acmeKey     = "acme-client-key-0815"
		otherKey    = "other-client-key-2342"
		session     = "billing fix" // a name that is no file name as it is
	)
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	if err := os.WriteFile(keys, []byte("acme "+acmeKey+"\nother "+otherKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	recDir := filepath.Join(dir, "rec")
	env := append(servetest.Env("HIPPOCAM_", "OPENAI_", "ANTHROPIC_"), "HIPPOCAM_UPSTREAM_API_KEY="+upstreamKey)
	root, log := servetest.Start(t, bin, env, "--upstream", "http://"+simAddr+"/v1", "--model", "hippocam-sim",
		"--context-window", "8000", "--keys", keys, "--record", recDir, "--janus-wait", "0") // the close applies at the next step, however loaded the machine

	do := func(method, path, key string, body any) (int, http.Header, []byte) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, root+path, rd)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Hippocam-Session", session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	var history []map[string]string
	turn := func(text string, stream bool) {
		t.Helper()
		history = append(history, map[string]string{"role": "user", "content": text})
		code, _, body := do("POST", "/v1/chat/completions", acmeKey, map[string]any{"model": "hippocam-sim", "messages": history, "stream": stream})
		if code != http.StatusOK {
			t.Fatalf("turn %q: %d %s\n%s", text, code, body, log)
		}
		answer := ""
		if stream {
			for _, l := range strings.Split(string(body), "\n") {
				var chunk struct {
					Choices []struct {
						Delta struct{ Content string } `json:"delta"`
					} `json:"choices"`
				}
				if d, ok := strings.CutPrefix(l, "data: "); ok && json.Unmarshal([]byte(d), &chunk) == nil && len(chunk.Choices) > 0 {
					answer += chunk.Choices[0].Delta.Content
				}
			}
		} else {
			var out struct {
				Choices []struct{ Message struct{ Content string } } `json:"choices"`
			}
			if err := json.Unmarshal(body, &out); err != nil || len(out.Choices) == 0 {
				t.Fatalf("turn %q: %v %s", text, err, body)
			}
			answer = out.Choices[0].Message.Content
		}
		history = append(history, map[string]string{"role": "assistant", "content": answer})
	}
	turn("#open Fix the bill | the bill is right\ninvoice_total := 120\n!say noted", false)
	turn("#close Ship the rocket\n!say still here", false) // closes what is not open: JANUS is refused
	turn("#close Fix the bill\n!say done", true)           // JANUS closes it beside this answer
	turn("!say next", false)                               // the close applies; PRECIP consolidates the span, in a job

	path := filepath.Join(recDir, "acme", "billing_20fix.jsonl")
	var lines []recLine
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := os.Stat(path); err == nil {
			lines = readRecording(t, path)
			if slices.ContainsFunc(lines, func(l recLine) bool { return l.Role == "precip" }) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no PRECIP call recorded in %s after 20 s (%d lines)\n%s", path, len(lines), log)
		}
		time.Sleep(50 * time.Millisecond)
	}

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{upstreamKey, acmeKey, otherKey, "Bearer"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the recording holds %q", secret)
		}
	}
	roles := map[string]int{}
	var refused []recLine
	streamed := 0
	for i, l := range lines {
		roles[l.Role]++
		if l.Tenant != "acme" || l.Session != session {
			t.Errorf("line %d: tenant %q session %q", i+1, l.Tenant, l.Session)
		}
		if l.Role == "agent" && strings.Contains(l.Error, "context canceled") {
			// A main call started beside JANUS and dropped when JANUS changed the context: it
			// is recorded as what it was, a call cut short.
			if l.LatencyMS <= 0 || l.Time.IsZero() {
				t.Errorf("line %d: a cancelled call without its latency or time", i+1)
			}
			continue
		}
		if l.Error != "" || l.Response == nil || l.Usage.Input <= 0 || l.LatencyMS <= 0 || l.Tries != 1 || l.Time.IsZero() {
			t.Errorf("line %d (%s): error %q, response %v, usage %+v, latency %v ms, tries %d", i+1, l.Role, l.Error, l.Response != nil, l.Usage, l.LatencyMS, l.Tries)
		}
		var req struct {
			Model    string            `json:"model"`
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(l.Request, &req); err != nil || req.Model != "hippocam-sim" || len(req.Messages) < 2 {
			t.Errorf("line %d: the request is not the body sent (%v): %s", i+1, err, clip(string(l.Request)))
		}
		if l.Stream {
			streamed++
			if l.Role != "agent" || l.FirstTextMS <= 0 || l.TTFBMS <= 0 || l.FirstTextMS > l.LatencyMS {
				t.Errorf("streamed line %d: role %s, ttfb %v ms, first text %v ms, latency %v ms", i+1, l.Role, l.TTFBMS, l.FirstTextMS, l.LatencyMS)
			}
		}
		switch l.Role {
		case "agent":
			if l.Case != nil || l.Attempt != 1 {
				t.Errorf("main-model line %d: case %v, attempt %d", i+1, l.Case, l.Attempt)
			}
		case "janus", "precip", "palim":
			if l.Case == nil || l.Case.Role != l.Role || l.Case.ID == "" || l.Case.Answer == "" {
				t.Fatalf("component line %d has no case: %+v", i+1, l.Case)
			}
			if l.Role != "janus" && len(l.Case.Span) != 2 {
				t.Errorf("line %d: span %v", i+1, l.Case.Span)
			}
		}
		if len(l.Problems) > 0 {
			refused = append(refused, l)
		}
	}
	if roles["agent"] < 3 || roles["janus"] < 5 || roles["precip"] < 1 || streamed == 0 {
		t.Fatalf("roles recorded %v, %d streamed; want 3 main calls (one streamed), JANUS thrice and its corrections, PRECIP", roles, streamed)
	}
	// The refused JANUS answer: asked Corrections+1 times, the same each time.
	if len(refused) != 3 {
		t.Fatalf("%d refused answers recorded, want JANUS's 3 attempts: %+v", len(refused), refused)
	}
	for i, l := range refused {
		if l.Role != "janus" || l.Attempt != i+1 || !strings.Contains(l.Case.Answer, "Ship the rocket") {
			t.Errorf("refused line %d: role %s attempt %d answer %q", i, l.Role, l.Attempt, l.Case.Answer)
		}
	}

	// hippocam check reads the recording as it is.
	out, err := exec.Command(bin, "check", "--json", path).Output()
	if err != nil {
		t.Fatalf("hippocam check %s: %v", path, err)
	}
	var checked struct {
		Results []CheckResult `json:"results"`
	}
	if err := json.Unmarshal(out, &checked); err != nil {
		t.Fatal(err)
	}
	cases := 0
	for _, l := range lines {
		if l.Case == nil {
			continue
		}
		if cases >= len(checked.Results) {
			t.Fatalf("check gave %d results for more cases", len(checked.Results))
		}
		r := checked.Results[cases]
		cases++
		if r.ID != l.Case.ID || r.Accepted != (len(l.Problems) == 0) || !slices.Equal(r.Problems, append([]string{}, l.Problems...)) {
			t.Errorf("check of %s: accepted %v problems %q; the engine found %q", l.Case.ID, r.Accepted, r.Problems, l.Problems)
		}
	}
	if cases != len(checked.Results) || cases == 0 {
		t.Fatalf("check gave %d results for %d cases", len(checked.Results), cases)
	}

	// The session links its recording; the endpoint serves it to its tenant only.
	sp := "/api/sessions/" + url.PathEscape(session)
	code, _, body := do("GET", sp, acmeKey, nil)
	var sess struct {
		Recording *struct {
			URL   string `json:"url"`
			Bytes int64  `json:"bytes"`
		} `json:"recording"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &sess) != nil || sess.Recording == nil || sess.Recording.URL != sp+"/recording" || sess.Recording.Bytes <= 0 {
		t.Fatalf("GET %s: %d, recording %+v", sp, code, sess.Recording)
	}
	code, h, body := do("GET", sp+"/recording", acmeKey, nil)
	if code != http.StatusOK || h.Get("Content-Type") != "application/x-ndjson" || !bytes.HasPrefix(raw, body[:len(body)/2]) || len(body) < len(raw) {
		t.Fatalf("GET recording: %d %s, %d bytes of the file's %d", code, h.Get("Content-Type"), len(body), len(raw))
	}
	if code, _, _ := do("GET", sp+"/recording", otherKey, nil); code != http.StatusNotFound {
		t.Errorf("another tenant's GET recording: %d, want 404", code)
	}

	// Deleting the session deletes its recording.
	if code, _, body := do("DELETE", sp, acmeKey, nil); code != http.StatusNoContent {
		t.Fatalf("DELETE %s: %d %s", sp, code, body)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the recording is still there after the session's deletion: %v", err)
	}
	if code, _, _ := do("GET", sp+"/recording", acmeKey, nil); code != http.StatusNotFound {
		t.Errorf("GET recording after the deletion: %d, want 404", code)
	}
	code, _, body = do("GET", "/metrics", acmeKey, nil)
	if code != http.StatusOK || !bytes.Contains(body, []byte("hippocam_record_lost_total 0")) || !regexp.MustCompile(`hippocam_record_lines_total [1-9]`).Match(body) {
		t.Errorf("GET /metrics: %d, no recording counts", code)
	}
	if strings.Contains(log.String(), "recording: a line was lost") {
		t.Errorf("lines were lost:\n%s", log)
	}
}

// Without --record there is no recording to link or serve.
func TestServeWithoutRecord(t *testing.T) {
	simAddr, addr := freeAddr(t), freeAddr(t)
	startSim(t, simAddr, sim.Latency{})
	start(t, "http://"+addr+"/healthz", "serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "s.db"), "--upstream", "http://"+simAddr+"/v1", "--context-window", "8000", "--model", "hippocam-sim")
	body := `{"model":"hippocam-sim","messages":[{"role":"user","content":"!say hi"}]}`
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Hippocam-Session", "plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d", resp.StatusCode)
	}
	resp, err = http.Get("http://" + addr + "/api/sessions/plain")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || bytes.Contains(b, []byte(`"recording"`)) {
		t.Errorf("GET session: %d, %s", resp.StatusCode, clip(string(b)))
	}
	resp, err = http.Get("http://" + addr + "/api/sessions/plain/recording")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "recording is off") {
		t.Errorf("GET recording without --record: %d %s", resp.StatusCode, b)
	}
}
