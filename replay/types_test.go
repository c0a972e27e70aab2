package replay_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The official SDKs' TypeScript types are the most precise statement of what a client may rely
// on in an answer: which fields are always there, which may be null. TestAnswerTypes holds a
// conversation in each of the three formats, streamed and not, through `hippocam serve` and with
// the simulated model alone, and has tsc check every answer body and every streamed event
// against those types.

// typesSchema is the JSON Schema of the conversation's one tool, read_file.
const typesSchema = `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`

// typesTurn1 is the user's message: the model calls the tool and says nothing.
const typesTurn1 = "Read the notes.\n!call read_file {\"path\":\"notes.txt\"}"

// typesSteps are the model's answers in the conversation, each with the tool result the client
// sends back for its call: a call alone, text with a call, text alone.
var typesSteps = []struct{ text, path, result string }{
	{"", "notes.txt", "notes: the launch is on friday\n!say the notes are read\n!call read_file {\"path\":\"more.txt\"}"},
	{"the notes are read", "more.txt", "more: nothing else\n!say all done"},
	{"all done", "", ""},
}

// typesPrior is an earlier answer as the client resends it: its text, its call's id and path,
// and the tool's result.
type typesPrior struct{ text, callID, path, result string }

// typesFormat is one inbound format: its route, its requests and the SDK types of its answer and
// of its streamed events (names the generated TypeScript declares).
type typesFormat struct {
	name, path          string
	answerType, eventTy string
	// request returns the body that resends the user's message and the earlier answers with
	// their tools' results.
	request func(stream bool, prior []typesPrior) string
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// pathArgs are the arguments of a read_file call, as a JSON object.
func pathArgs(path string) string { return `{"path":` + jsonString(path) + `}` }

var typesFormats = []typesFormat{
	{
		name: "chat", path: "/v1/chat/completions", answerType: "ChatAnswer", eventTy: "ChatEvent",
		request: func(stream bool, prior []typesPrior) string {
			msgs := `{"role":"user","content":` + jsonString(typesTurn1) + `}`
			for _, p := range prior {
				content := "null"
				if p.text != "" {
					content = jsonString(p.text)
				}
				msgs += `,{"role":"assistant","content":` + content + `,"tool_calls":[{"id":` + jsonString(p.callID) +
					`,"type":"function","function":{"name":"read_file","arguments":` + jsonString(pathArgs(p.path)) + `}}]}`
				msgs += `,{"role":"tool","tool_call_id":` + jsonString(p.callID) + `,"content":` + jsonString(p.result) + `}`
			}
			s := ""
			if stream {
				s = `,"stream":true,"stream_options":{"include_usage":true}`
			}
			return `{"model":"hippocam-sim","messages":[` + msgs + `],"tools":[{"type":"function","function":{"name":"read_file","parameters":` + typesSchema + `}}]` + s + `}`
		},
	},
	{
		name: "responses", path: "/v1/responses", answerType: "ResponsesAnswer", eventTy: "ResponsesEvent",
		request: func(stream bool, prior []typesPrior) string {
			input := `{"role":"user","content":` + jsonString(typesTurn1) + `}`
			for _, p := range prior {
				if p.text != "" {
					input += `,{"type":"message","role":"assistant","content":[{"type":"output_text","text":` + jsonString(p.text) + `}]}`
				}
				input += `,{"type":"function_call","call_id":` + jsonString(p.callID) + `,"name":"read_file","arguments":` + jsonString(pathArgs(p.path)) + `}`
				input += `,{"type":"function_call_output","call_id":` + jsonString(p.callID) + `,"output":` + jsonString(p.result) + `}`
			}
			return `{"model":"hippocam-sim","input":[` + input + `],"tools":[{"type":"function","name":"read_file","parameters":` + typesSchema + `}],"stream":` + strconv.FormatBool(stream) + `}`
		},
	},
	{
		name: "messages", path: "/v1/messages", answerType: "MessagesAnswer", eventTy: "MessagesEvent",
		request: func(stream bool, prior []typesPrior) string {
			msgs := `{"role":"user","content":` + jsonString(typesTurn1) + `}`
			for _, p := range prior {
				blocks := ""
				if p.text != "" {
					blocks = `{"type":"text","text":` + jsonString(p.text) + `},`
				}
				msgs += `,{"role":"assistant","content":[` + blocks + `{"type":"tool_use","id":` + jsonString(p.callID) + `,"name":"read_file","input":` + pathArgs(p.path) + `}]}`
				msgs += `,{"role":"user","content":[{"type":"tool_result","tool_use_id":` + jsonString(p.callID) + `,"content":` + jsonString(p.result) + `}]}`
			}
			return `{"model":"hippocam-sim","max_tokens":1024,"messages":[` + msgs + `],"tools":[{"name":"read_file","input_schema":` + typesSchema + `}],"stream":` + strconv.FormatBool(stream) + `}`
		},
	},
}

// typedValue is one captured answer or event and the TypeScript type it must satisfy.
type typedValue struct {
	label, tsType string
	json          []byte
}

// exchange posts body to url and returns the answer's JSON values: the body, or each streamed
// event's data (the chat stream's [DONE] left out). It fails the test on a status other than
// 200 or on an event whose name is not its data's type.
func exchange(t *testing.T, url, session, body string) [][]byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k-types")
	req.Header.Set("X-Api-Key", "k-types")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("Hippocam-Session", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %s %s\nrequest: %s", url, resp.Status, b, body)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return [][]byte{b}
	}
	var out [][]byte
	event := ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			if data == "[DONE]" {
				continue
			}
			var head struct{ Type string }
			if err := json.Unmarshal([]byte(data), &head); err != nil {
				t.Fatalf("POST %s: event data %s: %v", url, data, err)
			}
			if event != "" && event != head.Type {
				t.Errorf("POST %s: event %q carries data of type %q", url, event, head.Type)
			}
			out = append(out, []byte(data))
			event = ""
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("POST %s: reading the stream: %v", url, err)
	}
	return out
}

// firstCall returns the id of the first tool call in vs: the id of a chat tool call or of an
// Anthropic tool_use block, the call_id of a Responses function_call.
func firstCall(vs [][]byte) string {
	var find func(v any) string
	find = func(v any) string {
		switch v := v.(type) {
		case map[string]any:
			switch v["type"] {
			case "function_call":
				if id, ok := v["call_id"].(string); ok && id != "" {
					return id
				}
			case "function", "tool_use":
				if id, ok := v["id"].(string); ok && id != "" {
					return id
				}
			}
			for _, x := range v {
				if id := find(x); id != "" {
					return id
				}
			}
		case []any:
			for _, x := range v {
				if id := find(x); id != "" {
					return id
				}
			}
		}
		return ""
	}
	for _, b := range vs {
		var v any
		if json.Unmarshal(b, &v) == nil {
			if id := find(v); id != "" {
				return id
			}
		}
	}
	return ""
}

// captureAnswers holds the conversation in every format, plain and streamed, against root, and
// returns every answer and event with its type.
func captureAnswers(t *testing.T, target, root string) []typedValue {
	t.Helper()
	var out []typedValue
	for _, f := range typesFormats {
		for _, stream := range []bool{false, true} {
			mode, typ := "plain", f.answerType
			if stream {
				mode, typ = "stream", f.eventTy
			}
			session := "types-" + f.name + "-" + mode
			var prior []typesPrior
			for turn, step := range typesSteps {
				vs := exchange(t, root+f.path, session, f.request(stream, prior))
				if all := bytes.Join(vs, []byte("\n")); step.text != "" && !bytes.Contains(all, []byte(step.text)) {
					t.Fatalf("%s %s %s: turn %d does not say %q:\n%s", target, f.name, mode, turn+1, step.text, all)
				}
				if step.path != "" {
					callID := firstCall(vs)
					if callID == "" {
						t.Fatalf("%s %s %s: turn %d called no tool:\n%s", target, f.name, mode, turn+1, bytes.Join(vs, []byte("\n")))
					}
					prior = append(prior, typesPrior{step.text, callID, step.path, step.result})
				}
				for i, v := range vs {
					label := fmt.Sprintf("%s %s %s turn %d", target, f.name, mode, turn+1)
					if stream {
						label += fmt.Sprintf(" event %d", i)
					}
					out = append(out, typedValue{label: label, tsType: typ, json: v})
				}
			}
		}
	}
	return out
}

// typesPrelude declares the types the answers are checked against. The SDKs' own types are used
// as they are, with two exceptions. The Response of the openai package declares output_text,
// which the SDK computes on the client from the output items (the API never sends it), so
// Responses answers and the responses inside their events are checked without it. And the
// Messages API sends ping events, which the Anthropic SDK's event union leaves out (its stream
// reader skips them).
const typesPrelude = `import type OpenAI from 'openai';
import type Anthropic from '@anthropic-ai/sdk';

type ChatAnswer = OpenAI.Chat.Completions.ChatCompletion;
type ChatEvent = OpenAI.Chat.Completions.ChatCompletionChunk;
type ResponsesAnswer = Omit<OpenAI.Responses.Response, 'output_text'>;
type ResponsesEvent = OpenAI.Responses.ResponseStreamEvent extends infer E
  ? E extends { response: OpenAI.Responses.Response }
    ? Omit<E, 'response'> & { response: ResponsesAnswer }
    : E
  : never;
type MessagesAnswer = Anthropic.Message;
type MessagesEvent = Anthropic.RawMessageStreamEvent | { type: 'ping' };

// is checks a value against T as an assignment would, except that properties T does not
// declare are let through: U is the value's own type, which must be assignable to T, so a
// missing or mistyped field is an error and an extra one is not.
function is<T>() {
  return <U extends T>(value: U): U => value;
}
`

// tsCheck is a generated TypeScript file: each value on one line, whose label the test quotes
// for tsc's errors on it.
type tsCheck struct {
	b      strings.Builder
	labels map[int]string
	line   int
}

func newTSCheck() *tsCheck {
	c := &tsCheck{labels: map[int]string{}}
	c.b.WriteString(typesPrelude)
	c.line = strings.Count(typesPrelude, "\n")
	return c
}

// add writes a check of v; with expectError, tsc must find an error on that line.
func (c *tsCheck) add(v typedValue, expectError bool) {
	c.b.WriteString("\n// " + v.label + "\n")
	c.line += 2
	if expectError {
		c.b.WriteString("// @ts-expect-error\n")
		c.line++
		c.labels[c.line] = v.label + " (tsc found no error in it)"
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, v.json); err != nil {
		compact.Reset()
		compact.Write(v.json)
	}
	fmt.Fprintf(&c.b, "is<%s>()(%s);\n", v.tsType, compact.Bytes())
	c.line++
	c.labels[c.line] = v.label
}

// tscErrorLine matches the first line of a tsc diagnostic: FILE(LINE,COL): error TS….
var tscErrorLine = regexp.MustCompile(`^[^(]*\((\d+),\d+\): error`)

// runTSC type-checks the file with the harness's typescript, in strict mode, and returns its
// diagnostics, each prefixed with the label of the value it concerns ("" when it passed).
func runTSC(t *testing.T, node string, c *tsCheck) string {
	t.Helper()
	dir := t.TempDir()
	harness, err := filepath.Abs(nodeHarness)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(harness, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "answers.ts")
	if err := os.WriteFile(file, []byte(c.b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tsc := filepath.Join(harness, "node_modules", "typescript", "bin", "tsc")
	cmd := exec.CommandContext(ctx, node, tsc, "--noEmit", "--strict", "--pretty", "false",
		"--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext",
		"--skipLibCheck", file)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		return ""
	}
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("run tsc: %v\n%s", err, out)
	}
	var report strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if m := tscErrorLine.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			if label, ok := c.labels[n]; ok {
				report.WriteString("[" + label + "] ")
			}
		}
		report.WriteString(strings.TrimPrefix(line, file) + "\n")
	}
	if report.Len() == 0 {
		report.WriteString(err.Error())
	}
	return report.String()
}

// withoutField returns v's JSON with the member at path (keys and indexes) removed, and false
// when v has no such member (the check of v itself then fails, as the member is required).
func withoutField(t *testing.T, v typedValue, path ...string) (typedValue, bool) {
	t.Helper()
	var root any
	if err := json.Unmarshal(v.json, &root); err != nil {
		t.Fatal(err)
	}
	cur := root
	for i, key := range path {
		last := i == len(path)-1
		switch c := cur.(type) {
		case map[string]any:
			if _, ok := c[key]; !ok {
				return typedValue{}, false
			}
			if last {
				delete(c, key)
			} else {
				cur = c[key]
			}
		case []any:
			n, err := strconv.Atoi(key)
			if err != nil || n >= len(c) || last {
				t.Fatalf("%s: bad path %s", v.label, strings.Join(path, "."))
			}
			cur = c[n]
		default:
			t.Fatalf("%s: bad path %s", v.label, strings.Join(path, "."))
		}
	}
	b, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	return typedValue{label: v.label + " without " + strings.Join(path, "."), tsType: v.tsType, json: b}, true
}

// typesNegatives are fields the SDK types require, each removed from a copy of one captured
// value: tsc must find every copy wrong, which shows that the check would catch a missing field.
var typesNegatives = []struct {
	label string
	path  []string
}{
	{"proxy chat plain turn 1", []string{"choices", "0", "message", "refusal"}},
	{"proxy chat stream turn 1 event 0", []string{"choices", "0", "finish_reason"}},
	{"proxy responses plain turn 2", []string{"output", "0", "content", "0", "annotations"}},
	{"proxy responses stream turn 1 event 0", []string{"sequence_number"}},
	{"proxy messages plain turn 2", []string{"content", "0", "citations"}},
	{"proxy messages stream turn 1 event 0", []string{"message", "usage", "cache_creation"}},
}

// TestAnswerTypes checks every answer body and streamed event of the three formats, through the
// proxy and from the simulated model alone, against the official SDKs' TypeScript types with
// tsc --strict. It fails quoting tsc's errors, each with the answer it concerns.
func TestAnswerTypes(t *testing.T) {
	t.Parallel()
	node := mustNodeHarness(t) // typescript is one of the harness's pinned packages
	upstream := simServer(t, nil)
	p := startProxy(t, upstream.URL+"/v1")
	values := captureAnswers(t, "proxy", p.root)
	values = append(values, captureAnswers(t, "sim", upstream.URL)...)

	c := newTSCheck()
	byLabel := map[string]typedValue{}
	for _, v := range values {
		c.add(v, false)
		byLabel[v.label] = v
	}
	for _, n := range typesNegatives {
		v, ok := byLabel[n.label]
		if !ok {
			t.Fatalf("no captured value %q", n.label)
		}
		if bad, ok := withoutField(t, v, n.path...); ok {
			c.add(bad, true)
		}
	}
	if report := runTSC(t, node, c); report != "" {
		t.Fatalf("the answers do not satisfy the SDKs' types (tsc):\n%s", report)
	}
}
