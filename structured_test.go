package hippocam_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
)

// checkStrict fails unless every object level of schema lists all its properties as required
// and sets additionalProperties false.
func checkStrict(t *testing.T, path string, schema any) {
	t.Helper()
	switch s := schema.(type) {
	case map[string]any:
		props, hasProps := s["properties"].(map[string]any)
		if hasProps || s["type"] == "object" {
			if s["additionalProperties"] != false {
				t.Errorf("%s: additionalProperties is %v, want false", path, s["additionalProperties"])
			}
			req, _ := s["required"].([]any)
			listed := map[string]bool{}
			for _, r := range req {
				listed[r.(string)] = true
			}
			if len(listed) != len(props) {
				t.Errorf("%s: required %v, properties %d", path, req, len(props))
			}
			for k := range props {
				if !listed[k] {
					t.Errorf("%s: property %s is not required", path, k)
				}
			}
		}
		for k, v := range s {
			checkStrict(t, path+"."+k, v)
		}
	case []any:
		for i, v := range s {
			checkStrict(t, fmt.Sprintf("%s[%d]", path, i), v)
		}
	}
}

func TestStrictSchema(t *testing.T) {
	in := `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string","enum":["p","q"]},"y":{"type":["integer"]}},"required":["y"]}},` +
		`"m":{"description":"no type"},"o":{"type":"object"}},"required":["z"]}`
	out, err := hippocam.StrictSchema(json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, out)
	}
	checkStrict(t, "$", v)
	s := string(out)
	for _, want := range []string{
		`"z":{"type":"string"}`, // required already: not nullable
		`"a":{"type":["array","null"]`,
		`"x":{"type":["string","null"],"enum":["p","q",null]}`,
		`"y":{"type":["integer"]}`, // required in its object
		`"m":{"anyOf":[{"description":"no type"},{"type":"null"}]}`,
		`"o":{"type":["object","null"],"properties":{},"required":[],"additionalProperties":false}`,
		`"required":["z","a","m","o"]`, // the properties' order, which sets the answer's order
	} {
		if !strings.Contains(s, want) {
			t.Errorf("strict schema lacks %s:\n%s", want, s)
		}
	}
	if strings.Index(s, `"z"`) > strings.Index(s, `"a"`) {
		t.Errorf("properties reordered: %s", s)
	}
	// Idempotent: a strict schema stays as it is.
	again, err := hippocam.StrictSchema(out)
	if err != nil || string(again) != s {
		t.Errorf("strict of strict differs:\n%s\n%s", again, s)
	}
	if _, err := hippocam.StrictSchema(json.RawMessage(`{"type":"object","additionalProperties":{"type":"string"}}`)); err == nil {
		t.Error("a map schema has a strict form")
	}
	if _, err := hippocam.StrictSchema(json.RawMessage(`{"type":`)); err == nil {
		t.Error("broken JSON accepted")
	}
}

// statusErr is an upstream's refusal, as the model clients report it.
type statusErr struct {
	status int
	msg    string
}

func (e *statusErr) Error() string                        { return "refused" }
func (e *statusErr) UpstreamStatus() (int, time.Duration) { return e.status, 0 }
func (e *statusErr) UpstreamError() (typ, code, msg string) {
	return "invalid_request_error", "", e.msg
}

func TestRefusesStructured(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&statusErr{400, "response_format of type json_schema is not supported"}, true},
		{&statusErr{400, "'strict' is not permitted"}, true},
		{&statusErr{400, "tool_choice: forcing a tool is not supported with thinking"}, true},
		{&statusErr{422, "Unrecognized field: tools"}, true},
		{fmt.Errorf("wrapped: %w", &statusErr{400, "Invalid schema for response_format 'x'"}), true},
		{&statusErr{400, "messages: content is empty"}, false},
		{&statusErr{500, "response_format broke the server"}, false},
		{errors.New("response_format"), false}, // no status: not an upstream's answer
	} {
		if got := hippocam.RefusesStructured(tc.err); got != tc.want {
			t.Errorf("RefusesStructured(%v %v) = %v, want %v", tc.err, tc.err.(interface{ Error() string }), got, tc.want)
		}
	}
	hippocam.RememberStructuredRefusal("http://u.test/v1", "m1")
	if !hippocam.StructuredRefused("http://u.test/v1", "m1") || hippocam.StructuredRefused("http://u.test/v1", "m2") || hippocam.StructuredRefused("http://v.test/v1", "m1") {
		t.Error("refusals are not remembered per upstream and model")
	}
	for _, s := range []string{"", "auto", "Native", "prose"} {
		if _, err := hippocam.ParseStructuredMode(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	if _, err := hippocam.ParseStructuredMode("json"); hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Errorf("json: %v", err)
	}
}

// DropNulls removes null members at every level and keeps the rest as written.
func TestDropNulls(t *testing.T) {
	for in, want := range map[string]string{
		`{"close":null,"open":null,"guidance":null}`:                           `{}`,
		`{"a":[{"x":0.20,"y":null},null],"b":"null <&>","c":{"d":null,"e":1}}`: `{"a":[{"x":0.20},null],"b":"null \u003c\u0026\u003e","c":{"e":1}}`,
		`{"memory":"I read it."}`:                                              `{"memory":"I read it."}`,
		`{"broken":null`:                                                       `{"broken":null`,
	} {
		got := hippocam.DropNulls(in)
		var a, b any
		if json.Unmarshal([]byte(got), &a) == nil && json.Unmarshal([]byte(want), &b) == nil {
			ga, _ := json.Marshal(a)
			gb, _ := json.Marshal(b)
			if string(ga) != string(gb) || (strings.Contains(in, "0.20") && !strings.Contains(got, "0.20")) {
				t.Errorf("DropNulls(%s) = %s, want %s", in, got, want)
			}
		} else if got != want {
			t.Errorf("DropNulls(%s) = %s, want %s", in, got, want)
		}
	}
}
