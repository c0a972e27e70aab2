package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai"
	"github.com/hippocam/hippocam/openai/wire"
)

var contract = &hippocam.Structured{Name: "write_memory", Description: "Write the memory.", Strict: true,
	Schema: json.RawMessage(`{"type":"object","properties":{"memory":{"type":"string"},"note":{"type":"string"}},"required":["memory"]}`)}

// A structured request's body carries response_format json_schema with the strict form of the
// schema, and no tools; the plain and the streamed body, and FromRequest, agree.
func TestStructuredRequestBody(t *testing.T) {
	const want = `{"type":"json_schema","json_schema":{"name":"write_memory","description":"Write the memory.",` +
		`"schema":{"type":"object","properties":{"memory":{"type":"string"},"note":{"type":["string","null"]}},"required":["memory","note"],"additionalProperties":false},"strict":true}}`
	req := userRequest("write it")
	req.Role, req.Structured = hippocam.CallPrecip, contract
	for _, stream := range []bool{false, true} {
		body, err := wire.NewRequestWriter(0).Body("m", req, stream)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if string(got["response_format"]) != want {
			t.Errorf("stream %v: response_format\n%s\nwant\n%s", stream, got["response_format"], want)
		}
		if _, ok := got["tools"]; ok {
			t.Errorf("stream %v: tools in a structured request: %s", stream, body)
		}
	}
	w, err := wire.FromRequest("m", req)
	if err != nil {
		t.Fatal(err)
	}
	if string(w.Extra["response_format"]) != want {
		t.Errorf("FromRequest: %s", w.Extra["response_format"])
	}
	back, ok, err := wire.ReadResponseFormat(w.Extra)
	if err != nil || !ok || back.Name != "write_memory" || !back.Strict {
		t.Errorf("ReadResponseFormat: %+v %v %v", back, ok, err)
	}
	// Without Structured, no response_format.
	body, _ := wire.NewRequestWriter(0).Body("m", userRequest("hi"), false)
	if strings.Contains(string(body), "response_format") {
		t.Errorf("plain request: %s", body)
	}
}

// A 400 naming response_format becomes a StructuredRefusal, remembered for the base URL and
// model: the next structured request to them fails at once without being sent, while a plain
// request, or another model, still goes out.
func TestStructuredRefusalRemembered(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	c := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		if strings.Contains(string(b), "response_format") {
			writeJSON(w, http.StatusBadRequest, `{"error":{"message":"Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.","type":"invalid_request_error","param":"response_format","code":null}}`)
			return
		}
		writeJSON(w, http.StatusOK, okAnswer)
	}, nil)
	req := userRequest("x")
	req.Role, req.Structured = hippocam.CallJanus, contract
	_, err := c.Complete(context.Background(), req)
	var refusal *hippocam.StructuredRefusal
	if !asRefusal(err, &refusal) || refusal.Remembered || refusal.Model != "test-model" {
		t.Fatalf("first refusal: %v", err)
	}
	if code, _ := statusOf(err); code != http.StatusBadRequest {
		t.Fatalf("the refusal lost the upstream status: %v", err)
	}
	for _, stream := range []bool{false, true} {
		if stream {
			_, err = c.CompleteStream(context.Background(), req, nil)
		} else {
			_, err = c.Complete(context.Background(), req)
		}
		if !asRefusal(err, &refusal) || !refusal.Remembered {
			t.Fatalf("stream %v: second structured request: %v", stream, err)
		}
	}
	if _, err := c.Complete(context.Background(), userRequest("plain")); err != nil {
		t.Fatal(err)
	}
	other := *req
	other.Model = "other-model"
	if _, err := c.Complete(context.Background(), &other); !asRefusal(err, &refusal) || refusal.Remembered {
		t.Fatalf("another model: %v", err)
	}
	if len(bodies) != 3 {
		t.Fatalf("%d requests sent, want 3 (refused, plain, other model)", len(bodies))
	}
	// A 400 for another reason is no refusal of the mode.
	c2 := MustClient(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusBadRequest, `{"error":{"message":"messages: too long","type":"invalid_request_error"}}`)
	}, func(cfg *openai.Config) { cfg.Model = "m3" })
	if _, err := c2.Complete(context.Background(), req); err == nil || hippocam.IsStructuredRefusal(err) {
		t.Fatalf("an unrelated 400: %v", err)
	}
}

func asRefusal(err error, r **hippocam.StructuredRefusal) bool { return errors.As(err, r) }

func statusOf(err error) (int, bool) {
	var s *openai.StatusError
	if errors.As(err, &s) {
		return s.Status, true
	}
	return 0, false
}
