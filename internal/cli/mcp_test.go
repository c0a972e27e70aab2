package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hippocam/hippocam/sim"
)

// MCP end to end. Proxied tasks run through serve (learning routed, two tenants, the simulated
// model); then the official MCP TypeScript client (httpapi/testdata/node/mcp.mjs) drives
// `hippocam mcp`, the built binary, over stdio on the same SQLite file while serve keeps
// answering, and serve's /mcp over Streamable HTTP: it lists the tools and resources, finds a
// detail of a proxied session with search_memory, opens it with recall_memory, gets the advisory
// for the next task, reports an outcome that lands in the cluster, and reads the lessons file.
// The second tenant, over both transports, sees none of it; a missing or wrong key is a 401.
func TestMCPEndToEnd(t *testing.T) {
	node, harness := mcpHarness(t)
	bin := hippocamBuild.Bin(t)
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	if err := os.WriteFile(keys, []byte("acme k-acme\nother k-other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "h.db")
	simAddr, addr := freeAddr(t), freeAddr(t)
	upstream := "http://" + simAddr + "/v1"
	startSim(t, simAddr, sim.Latency{})
	start(t, "http://"+addr+"/healthz", "serve", "--addr", addr, "--db", db, "--upstream", upstream, "--context-window", "8000",
		"--model", "hippocam-sim", "--learn", "routed", "--keys", keys,
		"--janus", "gate") // each task's close is consolidated in its own step, before the search
	api := &restClient{t: t, base: "http://" + addr}

	const task = "#route lessons | shop visits\nVisit the shop\ntags: shop weekly\ndecide greeting: formal | casual | brief"
	choiceA := api.shopTask("k-acme", "visit-a", task, "QX-A17")
	choiceB := api.shopTask("k-acme", "visit-b", task, "QX-B29")
	api.waitJobs("k-acme")
	var sessA struct {
		Learning struct{ Cluster, System string }
	}
	api.getJSON("k-acme", "/api/sessions/visit-a", &sessA)
	cluster := sessA.Learning.Cluster
	if cluster == "" || sessA.Learning.System != "lessons" {
		t.Fatalf("visit-a was routed to %+v, want a lessons cluster", sessA.Learning)
	}
	mcpArgs := func(tenant string) string {
		args, _ := json.Marshal([]string{"mcp", "--db", db, "--tenant", tenant, "--upstream", upstream, "--model", "hippocam-sim",
			"--learn", "routed", "--context-window", "8000"})
		return string(args)
	}

	// stdio, beside serve: serve keeps answering another session meanwhile.
	busy := api.keepBusy("k-acme", "beside")
	a := runDriver(t, node, harness, "owner", map[string]string{"HIPPOCAM_MCP_COMMAND": bin, "HIPPOCAM_MCP_ARGS": mcpArgs("acme"),
		"HIPPOCAM_SESSION": "visit-a", "HIPPOCAM_QUERY": "Dana", "HIPPOCAM_TASK": task, "HIPPOCAM_FEEDBACK": "feedback: greeting = " + choiceA + " wrong"})
	if n, err := busy(); err != nil || n == 0 {
		t.Fatalf("serve beside hippocam mcp: %d requests answered, %v", n, err)
	}
	checkOwner(t, a, "visit-a", "QX-A17", cluster, "done")
	if got := api.trajectories("k-acme", cluster); got != 1 {
		t.Fatalf("after the stdio outcome the cluster holds %d trajectories, want 1", got)
	}
	if want := api.get("k-acme", "/api/lessons/export"); a.Lessons.Answer[0].Text != want || !strings.Contains(want, "greeting") {
		t.Fatalf("lessons.md over stdio:\n%s\nthe REST export:\n%s", a.Lessons.Answer[0].Text, want)
	}
	if want := api.get("k-acme", "/api/sessions/visit-a/expand"); a.Expand.Answer[0].Text != want {
		t.Fatalf("the expansion over stdio differs from the REST one")
	}

	// Streamable HTTP at /mcp: the advisory now holds the lesson the stdio outcome taught.
	b := runDriver(t, node, harness, "owner", map[string]string{"HIPPOCAM_MCP_URL": api.base + "/mcp", "HIPPOCAM_API_KEY": "k-acme",
		"HIPPOCAM_SESSION": "visit-b", "HIPPOCAM_QUERY": "QX-B29", "HIPPOCAM_TASK": task, "HIPPOCAM_FEEDBACK": "feedback: greeting = " + choiceB + " wrong"})
	checkOwner(t, b, "visit-b", "QX-B29", cluster, "queued")
	if adv := b.Advisory.Structured.Advisory; !strings.Contains(adv, "greeting = "+choiceA) {
		t.Errorf("the advisory over HTTP does not hold the lesson about %q: %q", choiceA, adv)
	}
	api.waitJobs("k-acme")
	if got := api.trajectories("k-acme", cluster); got != 2 {
		t.Fatalf("after the HTTP outcome the cluster holds %d trajectories, want 2", got)
	}

	// The other tenant, over both transports: nothing of acme's, and the same answer for
	// acme's session as for one that does not exist. Nothing of acme's changes.
	sessions, clusters := api.get("k-acme", "/api/sessions"), api.get("k-acme", "/api/clusters")
	for _, env := range []map[string]string{
		{"HIPPOCAM_MCP_COMMAND": bin, "HIPPOCAM_MCP_ARGS": mcpArgs("other")},
		{"HIPPOCAM_MCP_URL": api.base + "/mcp", "HIPPOCAM_API_KEY": "k-other"},
	} {
		env["HIPPOCAM_SESSION"], env["HIPPOCAM_QUERY"] = "visit-a", "Dana"
		s := runDriver(t, node, harness, "stranger", env)
		checkStranger(t, s, "visit-a")
	}
	if api.get("k-acme", "/api/sessions") != sessions || api.get("k-acme", "/api/clusters") != clusters {
		t.Fatal("the other tenant's calls changed acme's sessions or clusters")
	}

	// No key, or a wrong one: the 401 of every endpoint.
	want := api.status("", "GET", "/api/sessions", "")
	for _, key := range []string{"", "k-wrong"} {
		if got := api.status(key, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); got != want || !strings.HasPrefix(got, "401 ") {
			t.Errorf("POST /mcp with key %q: %s, want %s", key, got, want)
		}
	}
}

// driverRun is what mcp.mjs printed.
type driverRun struct {
	OK        bool   `json:"ok"`
	SDK       string `json:"sdk"`
	Transport string `json:"transport"`
	Error     string `json:"error"`
	Tools     []struct {
		Name            string   `json:"name"`
		Required        []string `json:"required"`
		HasOutputSchema bool     `json:"hasOutputSchema"`
	} `json:"tools"`
	Resources []string   `json:"resources"`
	Templates []string   `json:"templates"`
	Sessions  toolAnswer `json:"sessions"`
	Search    toolAnswer `json:"search"`
	Recall    toolAnswer `json:"recall"`
	Advisory  toolAnswer `json:"advisory"`
	Outcome   toolAnswer `json:"outcome"`
	Ghost     toolAnswer `json:"ghost"`
	Lessons   readAnswer `json:"lessons"`
	Expand    readAnswer `json:"expand"`
	Faults    struct {
		UnknownTool struct {
			Error string `json:"error"`
		} `json:"unknownTool"`
		WrongType toolAnswer `json:"wrongType"`
		Ghost     toolAnswer `json:"ghost"`
	} `json:"faults"`
	SearchLessons toolAnswer `json:"searchLessons"`
}

type toolAnswer struct {
	IsError    bool   `json:"isError"`
	Text       string `json:"text"`
	Structured struct {
		Sessions []struct{ ID, Resource string }
		Hits     []struct{ ID, Ref, Open, Snippet string }
		Messages []struct{ ID, Content string }
		Decision string
		Cluster  string
		Advisory string
		Update   string
		Ended    bool
		Lessons  []any
	} `json:"structured"`
}

type readAnswer struct {
	Answer []struct{ URI, MimeType, Text string } `json:"answer"`
	Error  string                                 `json:"error"`
}

func checkOwner(t *testing.T, r *driverRun, session, detail, cluster, update string) {
	t.Helper()
	var names []string
	for _, tool := range r.Tools {
		names = append(names, tool.Name)
		if !tool.HasOutputSchema {
			t.Errorf("%s: %s has no output schema", r.Transport, tool.Name)
		}
	}
	slices.Sort(names)
	if got := strings.Join(names, " "); got != "get_advisory list_sessions recall_memory report_outcome search_lessons search_memory" {
		t.Errorf("%s: tools %s", r.Transport, got)
	}
	expand := "hippocam://sessions/" + session + "/expand"
	if !slices.Contains(r.Resources, "hippocam://lessons.md") || !slices.Contains(r.Resources, expand) || len(r.Templates) != 1 || r.Templates[0] != "hippocam://sessions/{id}/expand" {
		t.Errorf("%s: resources %v, templates %v", r.Transport, r.Resources, r.Templates)
	}
	if len(r.Search.Structured.Hits) != 1 || r.Search.Structured.Hits[0].Ref == "" {
		t.Fatalf("%s: search_memory found %+v (%s): want one archived hit", r.Transport, r.Search.Structured.Hits, r.Search.Text)
	}
	if r.Recall.IsError || !strings.Contains(r.Recall.Text, detail) || !strings.Contains(r.Recall.Text, "Dana") {
		t.Fatalf("%s: recall_memory of %s: %s", r.Transport, r.Search.Structured.Hits[0].Open, r.Recall.Text)
	}
	if a := r.Advisory.Structured; r.Advisory.IsError || a.Decision != "match" || a.Cluster != cluster {
		t.Fatalf("%s: get_advisory %+v (%s), want cluster %s (a lexical match)", r.Transport, a, r.Advisory.Text, cluster)
	}
	if o := r.Outcome.Structured; r.Outcome.IsError || !o.Ended || o.Cluster != cluster || o.Update != update {
		t.Fatalf("%s: report_outcome %+v (%s), want the update %s in %s", r.Transport, o, r.Outcome.Text, update, cluster)
	}
	if r.Lessons.Error != "" || len(r.Lessons.Answer) != 1 || r.Lessons.Answer[0].MimeType != "text/markdown" {
		t.Fatalf("%s: lessons.md: %+v", r.Transport, r.Lessons)
	}
	if r.Expand.Error != "" || len(r.Expand.Answer) != 1 || r.Expand.Answer[0].URI != expand || !strings.Contains(r.Expand.Answer[0].Text, detail) {
		t.Fatalf("%s: the expansion of %s: %d contents, error %q", r.Transport, session, len(r.Expand.Answer), r.Expand.Error)
	}
	f := r.Faults
	if !strings.Contains(f.UnknownTool.Error, `unknown tool "forget_everything"`) {
		t.Errorf("%s: unknown tool: %q", r.Transport, f.UnknownTool.Error)
	}
	if !f.WrongType.IsError || !strings.HasPrefix(f.WrongType.Text, "invalid: ") {
		t.Errorf("%s: an argument of the wrong type: %+v", r.Transport, f.WrongType)
	}
	if !f.Ghost.IsError || f.Ghost.Text != `not_found: session "ghost" not found` {
		t.Errorf("%s: an unknown session: %+v", r.Transport, f.Ghost)
	}
}

func checkStranger(t *testing.T, r *driverRun, session string) {
	t.Helper()
	if len(r.Sessions.Structured.Sessions) != 0 || len(r.Resources) != 1 || r.Resources[0] != "hippocam://lessons.md" {
		t.Errorf("%s: the other tenant lists sessions %+v and resources %v", r.Transport, r.Sessions.Structured.Sessions, r.Resources)
	}
	want := strings.ReplaceAll(r.Ghost.Text, `"ghost"`, fmt.Sprintf("%q", session))
	for name, a := range map[string]toolAnswer{"search_memory": r.Search, "recall_memory": r.Recall, "report_outcome": r.Outcome} {
		if !a.IsError || a.Text != want || want != fmt.Sprintf("not_found: session %q not found", session) {
			t.Errorf("%s: the other tenant's %s of %s: %+v, want %q as for a session that does not exist", r.Transport, name, session, a, want)
		}
	}
	if r.Expand.Error == "" || !strings.Contains(r.Expand.Error, "Resource not found") {
		t.Errorf("%s: the other tenant read the expansion: %+v", r.Transport, r.Expand)
	}
	if len(r.Lessons.Answer) != 1 || strings.Contains(r.Lessons.Answer[0].Text, "greeting") || len(r.SearchLessons.Structured.Lessons) != 0 {
		t.Errorf("%s: the other tenant sees lessons: %+v %+v", r.Transport, r.Lessons, r.SearchLessons.Structured.Lessons)
	}
}

// mcpHarness returns node and the harness directory, skipping the test as the other official
// SDK tests do (TestServeNodeSDK) when node or the harness's MCP client is missing, unless CI is
// set.
func mcpHarness(t *testing.T) (node, dir string) {
	t.Helper()
	dir, _ = filepath.Abs("../../httpapi/testdata/node")
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the MCP client harness needs node and `npm ci` in %s: %v", dir, err)
		}
		t.Skipf("MCP client test skipped (%v); run `npm ci` in %s", err, dir)
	}
	return node, dir
}

// runDriver runs mcp.mjs's scenario with env and returns what it printed.
func runDriver(t *testing.T, node, dir, scenario string, env map[string]string) *driverRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "mcp.mjs", scenario)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HIPPOCAM_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var r driverRun
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || !r.OK || runErr != nil {
		t.Fatalf("mcp.mjs %s: %v, %v\nstdout:\n%s\nstderr:\n%s", scenario, runErr, err, stdout.String(), stderr.String())
	}
	if r.SDK == "" {
		t.Fatalf("mcp.mjs ran without the MCP client's version")
	}
	return &r
}

// restClient talks to serve's proxy and REST API.
type restClient struct {
	t    *testing.T
	base string
}

func (c *restClient) do(key, method, path, body string, header ...string) (int, string) {
	c.t.Helper()
	code, b, err := c.send(key, method, path, body, header...)
	if err != nil {
		c.t.Fatal(err)
	}
	return code, b
}

// send is do for any goroutine: it returns the failure.
func (c *restClient) send(key, method, path, body string, header ...string) (int, string, error) {
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// status is "STATUS BODY" of a request.
func (c *restClient) status(key, method, path, body string) string {
	code, b := c.do(key, method, path, body)
	return fmt.Sprintf("%d %s", code, b)
}

func (c *restClient) get(key, path string) string {
	c.t.Helper()
	code, b := c.do(key, "GET", path, "")
	if code != 200 {
		c.t.Fatalf("GET %s: %d %s", path, code, b)
	}
	return b
}

func (c *restClient) getJSON(key, path string, v any) {
	c.t.Helper()
	if err := json.Unmarshal([]byte(c.get(key, path)), v); err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
}

// chat sends the history to the proxy in session and returns the answer's text.
func (c *restClient) chat(key, session string, history []map[string]string) (string, error) {
	body, _ := json.Marshal(map[string]any{"model": "hippocam-sim", "messages": history})
	code, b, err := c.send(key, "POST", "/v1/chat/completions", string(body), "Hippocam-Session", session)
	if err != nil {
		return "", err
	}
	var resp struct {
		Choices []struct {
			Message struct{ Content string }
		}
	}
	if err := json.Unmarshal([]byte(b), &resp); code != 200 || err != nil || len(resp.Choices) != 1 {
		return "", fmt.Errorf("session %s: %d %s", session, code, b)
	}
	return resp.Choices[0].Message.Content, nil
}

// shopTask runs a proxied task in session: the task, whose decision the agent answers, then an
// intent that closes, so that the message with the owner's name and code is archived beneath a
// memory. It returns the option the agent chose.
func (c *restClient) shopTask(key, session, task, code string) string {
	c.t.Helper()
	var history []map[string]string
	var choice string
	for i, text := range []string{task, "#open Meet the owner | the owner is met\n!say meeting",
		"The owner of the shop is called Dana, and the shop's code is " + code + ".\n!say noted", "#close Meet the owner\n!say met"} {
		history = append(history, map[string]string{"role": "user", "content": text})
		answer, err := c.chat(key, session, history)
		if err != nil {
			c.t.Fatal(err)
		}
		if i == 0 {
			var ok bool
			if choice, ok = strings.CutPrefix(answer, "greeting = "); !ok {
				c.t.Fatalf("the agent answered the task %q", answer)
			}
		}
		history = append(history, map[string]string{"role": "assistant", "content": answer})
	}
	return choice
}

// waitJobs waits until the tenant has no queued job (consolidations, cluster updates).
func (c *restClient) waitJobs(key string) {
	c.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var jobs struct{ Jobs []any }
		c.getJSON(key, "/api/jobs", &jobs)
		if len(jobs.Jobs) == 0 {
			return
		}
	}
	c.t.Fatal("the tenant's jobs did not finish within 60 s")
}

func (c *restClient) trajectories(key, cluster string) int {
	c.t.Helper()
	var got struct{ Trajectories int }
	c.getJSON(key, "/api/clusters/"+cluster, &got)
	return got.Trajectories
}

// keepBusy sends turns of a session to the proxy until the returned function is called, which
// reports how many were answered and the first failure.
func (c *restClient) keepBusy(key, session string) func() (int, error) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var n int
	var failed error
	wg.Add(1)
	go func() {
		defer wg.Done()
		var history []map[string]string
		for i := 0; i < 200; i++ {
			select {
			case <-stop:
				return
			default:
			}
			history = append(history, map[string]string{"role": "user", "content": fmt.Sprintf("!say turn %d", i)})
			answer, err := c.chat(key, session, history)
			if err != nil {
				failed = err
				return
			}
			history = append(history, map[string]string{"role": "assistant", "content": answer})
			n++
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return func() (int, error) {
		close(stop)
		wg.Wait()
		return n, failed
	}
}

// The command over pipes, with the Go SDK's client: it answers MCP on its stdout, nothing else
// goes there, and it ends cleanly when its stdin closes.
func TestMcpCommandStdio(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var logs bytes.Buffer
	cmd := &McpCommand{Stdin: inR, Stdout: outW, Stderr: &logs}
	if err := cmd.ParseFlags([]string{"--db", filepath.Join(t.TempDir(), "m.db"), "--tenant", "acme"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Run(context.Background())
		outW.Close()
		done <- errors.Join(err, cmd.Close())
	}()
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 6 {
		t.Fatalf("tools: %v (%v)", tools, err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "get_advisory", Arguments: map[string]any{"task": "anything"}})
	if err != nil || res.IsError || res.StructuredContent.(map[string]any)["decision"] != "off" {
		t.Fatalf("get_advisory with learning off: %+v (%v)", res, err)
	}
	cs.Close() // closes the command's stdin
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the command ended with %v\n%s", err, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not end when its stdin closed")
	}
}

// Flags: learning needs a model; nothing but flags is taken.
func TestMcpCommandFlags(t *testing.T) {
	for _, args := range [][]string{{"--learn", "routed"}, {"extra"}, {"--sqlite-synchronous", "OFF"}, {"--upstream-format", "grpc"}, {"--structured", "json"}} {
		cmd := &McpCommand{Stderr: io.Discard}
		if err := cmd.ParseFlags(args); err == nil {
			t.Errorf("%v was accepted", args)
		}
	}
	cmd := &McpCommand{Stderr: io.Discard}
	if err := cmd.ParseFlags([]string{"--learn", "routed", "--upstream", "http://127.0.0.1:1/v1", "--tenant", "acme"}); err != nil || cmd.Tenant != "acme" {
		t.Fatalf("%v, tenant %q", err, cmd.Tenant)
	}
}
