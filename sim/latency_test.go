package sim_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// The latency tests assert orderings and lower bounds only: a busy machine may make anything
// slower, never faster.

// latencyPrompt makes a long answer (a said line and 100 tokens of filler) followed by a tool
// call, so that the text arrives in many pieces.
const latencyPrompt = "!say streaming now\n!pad 100\n!call lookup {\"id\":7}"

// latencyFormat is one wire format the simulation serves, with a request asking latencyPrompt
// and a way to find the text in its stream events.
type latencyFormat struct {
	name, path string
	body       func(stream bool) []byte
	// piece returns the text an event's data carries, "" for other events.
	piece func(data map[string]any) string
}

func latencyFormats() []latencyFormat {
	lookup := `{"name":"lookup","description":"Look a thing up","parameters":{"type":"object"}}`
	return []latencyFormat{
		{
			name: "Chat", path: "/chat/completions",
			body: func(stream bool) []byte {
				return []byte(`{"model":"m","stream":` + boolJSON(stream) + `,"messages":[{"role":"user","content":` + jsonString(latencyPrompt) + `}],` +
					`"tools":[{"type":"function","function":` + lookup + `}]}`)
			},
			piece: func(d map[string]any) string {
				choices, _ := d["choices"].([]any)
				if len(choices) == 0 {
					return ""
				}
				delta, _ := choices[0].(map[string]any)["delta"].(map[string]any)
				s, _ := delta["content"].(string)
				return s
			},
		},
		{
			name: "Responses", path: "/responses",
			body: func(stream bool) []byte {
				return []byte(`{"model":"m","stream":` + boolJSON(stream) + `,"input":[{"role":"user","content":` + jsonString(latencyPrompt) + `}],` +
					`"tools":[{"type":"function",` + strings.TrimPrefix(lookup, "{") + `]}`)
			},
			piece: func(d map[string]any) string {
				if d["type"] != "response.output_text.delta" {
					return ""
				}
				s, _ := d["delta"].(string)
				return s
			},
		},
		{
			name: "Messages", path: "/messages",
			body: func(stream bool) []byte {
				return []byte(`{"model":"m","max_tokens":500,"stream":` + boolJSON(stream) + `,"messages":[{"role":"user","content":` + jsonString(latencyPrompt) + `}],` +
					`"tools":[{"name":"lookup","description":"Look a thing up","input_schema":{"type":"object"}}]}`)
			},
			piece: func(d map[string]any) string {
				if d["type"] != "content_block_delta" {
					return ""
				}
				delta, _ := d["delta"].(map[string]any)
				if delta["type"] != "text_delta" {
					return ""
				}
				s, _ := delta["text"].(string)
				return s
			},
		},
	}
}

func boolJSON(b bool) string { return map[bool]string{true: "true", false: "false"}[b] }

// arrival is one piece of streamed text and when it was read, counted from the request.
type arrival struct {
	at   time.Duration
	text string
}

// timedStream sends a streamed request and reads its events as they come, returning the whole
// body, the arrival of each piece of text and the time the body ended.
func timedStream(t *testing.T, e endpoint, f latencyFormat) (body []byte, pieces []arrival, end time.Duration) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.base+f.path, bytes.NewReader(f.body(true)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var all bytes.Buffer
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadBytes('\n')
		all.Write(line)
		if data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data: ")); ok && string(data) != "[DONE]" {
			var ev map[string]any
			if jerr := json.Unmarshal(data, &ev); jerr != nil {
				t.Fatalf("event %s: %v", data, jerr)
			}
			if s := f.piece(ev); s != "" {
				pieces = append(pieces, arrival{time.Since(t0), s})
			}
		}
		if err == io.EOF {
			return all.Bytes(), pieces, time.Since(t0)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// latencyModel returns a fresh model with the given latency.
func latencyModel(t *testing.T, l sim.Latency) *sim.Model {
	t.Helper()
	m := mustModel(t)
	if err := m.SetLatency(l); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLatencyStream checks, for every format over a socket and through Transport, that a
// streamed answer starts after the time to first byte, arrives in pieces spread over the time
// its tokens take, ends no sooner than all of them are produced, and says exactly what the same
// request says without latency.
func TestLatencyStream(t *testing.T) {
	const ttft, rate = 200 * time.Millisecond, 400.0 // about 110 output tokens: 0.28 s after the first byte
	tok := tokenizer.MustDefault()
	for _, f := range latencyFormats() {
		for _, how := range []string{"Server", "Transport"} {
			t.Run(f.name+"/"+how, func(t *testing.T) {
				t.Parallel()
				_, want := endpoints(t, mustModel(t))[how].post(t, f.path, "", f.body(true))
				body, pieces, end := timedStream(t, endpoints(t, latencyModel(t, sim.Latency{TTFT: ttft, TokensPerSecond: rate}))[how], f)
				if !bytes.Equal(body, want) {
					t.Fatalf("the stream with latency differs from the one without:\n%s\nwant\n%s", body, want)
				}
				if len(pieces) < 5 {
					t.Fatalf("%d pieces of text, want several", len(pieces))
				}
				var text strings.Builder
				for _, p := range pieces {
					text.WriteString(p.text)
				}
				output := tok.Count(text.String()) + tok.Count("lookup") + tok.Count(`{"id":7}`)
				production := time.Duration(float64(output) / rate * float64(time.Second))
				first, last := pieces[0].at, pieces[len(pieces)-1].at
				if first < ttft {
					t.Errorf("the first piece came after %v, before the time to first byte %v", first, ttft)
				}
				// The text is most of the output, so it takes most of the production time.
				if last-first < production/2 {
					t.Errorf("the pieces came over %v (first %v, last %v), want at least %v", last-first, first, last, production/2)
				}
				if end < ttft+production {
					t.Errorf("the stream ended after %v, before the %v its %d tokens take", end, ttft+production, output)
				}
				distinct := 1
				for i := 1; i < len(pieces); i++ {
					if pieces[i].at-pieces[i-1].at > time.Millisecond {
						distinct++
					}
				}
				if distinct < len(pieces)/2 {
					t.Errorf("only %d of %d pieces came apart from the one before: the stream is not paced", distinct, len(pieces))
				}
			})
		}
	}
}

// TestLatencyPlain checks that an unstreamed answer comes whole after the time to first byte and
// the production of its output, and equals the answer without latency.
func TestLatencyPlain(t *testing.T) {
	const ttft, rate = 150 * time.Millisecond, 500.0
	for _, f := range latencyFormats() {
		for _, how := range []string{"Server", "Transport"} {
			t.Run(f.name+"/"+how, func(t *testing.T) {
				t.Parallel()
				_, want := endpoints(t, mustModel(t))[how].post(t, f.path, "", f.body(false))
				e := endpoints(t, latencyModel(t, sim.Latency{TTFT: ttft, TokensPerSecond: rate}))[how]
				t0 := time.Now()
				_, got := e.post(t, f.path, "", f.body(false))
				took := time.Since(t0)
				if !bytes.Equal(got, want) {
					t.Fatalf("the answer with latency differs from the one without:\n%s\nwant\n%s", got, want)
				}
				var usage struct {
					Usage struct {
						Completion int `json:"completion_tokens"`
						Output     int `json:"output_tokens"`
					} `json:"usage"`
				}
				if err := json.Unmarshal(got, &usage); err != nil {
					t.Fatal(err)
				}
				output := usage.Usage.Completion + usage.Usage.Output // one of them is set
				if output < 100 {
					t.Fatalf("%d output tokens, want the filler's 100 and more", output)
				}
				if min := ttft + time.Duration(float64(output)/rate*float64(time.Second)); took < min {
					t.Errorf("the answer came after %v, before the %v its %d tokens take", took, min, output)
				}
			})
		}
	}
}

// TestLatencyCancel checks that a request whose client goes away stops the answer: the handler
// returns long before the answer would have been produced, over a socket and through Transport.
func TestLatencyCancel(t *testing.T) {
	const rate = 50.0 // !pad 2000: 40 s of output
	body := []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"!say go\n!pad 2000"}]}`)
	m := latencyModel(t, sim.Latency{TTFT: 10 * time.Millisecond, TokensPerSecond: rate})
	returned := make(chan struct{}, 1)
	h := m.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		returned <- struct{}{}
	}))
	defer srv.Close()
	for _, e := range []endpoint{{client: srv.Client(), base: srv.URL + "/v1"}, {client: &http.Client{Transport: m.Transport()}, base: "http://sim.invalid/v1"}} {
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.base+"/chat/completions", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		for i := 0; i < 3; i++ { // the role chunk and two pieces of text
			if _, err := br.ReadBytes('\n'); err != nil {
				t.Fatal(err)
			}
		}
		cancelled := time.Now()
		cancel()
		rest, err := io.ReadAll(br)
		resp.Body.Close()
		if err == nil || bytes.Contains(rest, []byte("[DONE]")) {
			t.Errorf("%s: the body went on to its end after the request was cancelled (%d bytes, %v)", e.base, len(rest), err)
		}
		if e.base == "http://sim.invalid/v1" && !errors.Is(err, context.Canceled) {
			t.Errorf("through Transport the cut body ends with %v, want context.Canceled", err)
		}
		if since := time.Since(cancelled); since > 10*time.Second {
			t.Errorf("%s: the body ended %v after the cancel", e.base, since)
		}
	}
	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("the server's handler was still producing 20 s after its client went away (the answer takes 40 s)")
	}
}

// TestLatencyInProcess checks InProcess: without latency Complete and CompleteStream give what a
// chat request through Handler gives; with latency the text comes to fn in paced pieces after
// the time to first byte, the tool call in the Response, and the answer is the same.
func TestLatencyInProcess(t *testing.T) {
	req := &hippocam.Request{Role: hippocam.CallAgent, Model: "m",
		Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: latencyPrompt}},
		Tools:    []hippocam.Tool{{Name: "lookup", Description: "Look a thing up", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	_, body := endpoints(t, mustModel(t))["Transport"].post(t, "/chat/completions", "", latencyFormats()[0].body(false))
	var chat struct {
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			Completion int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &chat); err != nil {
		t.Fatal(err)
	}
	want := chat.Choices[0].Message

	check := func(t *testing.T, resp *hippocam.Response) {
		t.Helper()
		if resp.Message.Content != want.Content || len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].ID != want.ToolCalls[0].ID ||
			resp.Message.ToolCalls[0].Name != "lookup" || resp.FinishReason != "tool_calls" || resp.Usage.Output != chat.Usage.Completion {
			t.Fatalf("answer %+v, want the chat answer %+v with %d output tokens", resp, want, chat.Usage.Completion)
		}
	}
	t.Run("Zero", func(t *testing.T) {
		p := mustModel(t).InProcess()
		resp, err := p.Complete(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		check(t, resp)
		var text strings.Builder
		resp, err = mustModel(t).InProcess().CompleteStream(t.Context(), req, func(s string) error { text.WriteString(s); return nil })
		if err != nil {
			t.Fatal(err)
		}
		check(t, resp)
		if text.String() != want.Content {
			t.Errorf("streamed text %q, want %q", text.String(), want.Content)
		}
	})
	t.Run("Paced", func(t *testing.T) {
		const ttft, rate = 200 * time.Millisecond, 400.0
		p := latencyModel(t, sim.Latency{TTFT: ttft, TokensPerSecond: rate}).InProcess()
		t0 := time.Now()
		var pieces []arrival
		resp, err := p.CompleteStream(t.Context(), req, func(s string) error {
			pieces = append(pieces, arrival{time.Since(t0), s})
			return nil
		})
		end := time.Since(t0)
		if err != nil {
			t.Fatal(err)
		}
		check(t, resp)
		production := time.Duration(float64(resp.Usage.Output) / rate * float64(time.Second))
		if len(pieces) < 5 || pieces[0].at < ttft || pieces[len(pieces)-1].at-pieces[0].at < production/2 || end < ttft+production {
			t.Errorf("%d pieces, first after %v, last after %v, end after %v; want several, from %v, over at least %v, ending after %v",
				len(pieces), pieces[0].at, pieces[len(pieces)-1].at, end, ttft, production/2, ttft+production)
		}
		t0 = time.Now()
		if resp, err = p.Complete(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		check(t, resp)
		if took := time.Since(t0); took < ttft+production {
			t.Errorf("Complete answered after %v, before the %v the answer takes", took, ttft+production)
		}
	})
	t.Run("ErrCallback", func(t *testing.T) {
		stop := errors.New("enough")
		calls := 0
		_, err := latencyModel(t, sim.Latency{TokensPerSecond: 1000}).InProcess().CompleteStream(t.Context(), req, func(string) error { calls++; return stop })
		if !errors.Is(err, stop) || calls != 1 {
			t.Errorf("error %v after %d calls, want the callback's after 1", err, calls)
		}
	})
	t.Run("ErrCancelled", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, err := latencyModel(t, sim.Latency{TTFT: time.Minute}).InProcess().Complete(ctx, req)
		if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %v, want EUNAVAILABLE matching the deadline", err)
		}
	})
}

// TestLatencyValidate checks that SetLatency refuses what cannot be waited for and keeps the
// latency it had.
func TestLatencyValidate(t *testing.T) {
	m := latencyModel(t, sim.Latency{TTFT: time.Second, TokensPerSecond: 10})
	for _, l := range []sim.Latency{{TTFT: -1}, {TokensPerSecond: -1}, {TokensPerSecond: math.Inf(1)}, {TokensPerSecond: math.NaN()}} {
		if err := m.SetLatency(l); hippocam.ErrorCode(err) != hippocam.EINVALID {
			t.Errorf("%+v: %v, want EINVALID", l, err)
		}
	}
	if got := m.Latency(); got != (sim.Latency{TTFT: time.Second, TokensPerSecond: 10}) {
		t.Errorf("latency %+v after refused changes", got)
	}
}
