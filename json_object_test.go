package hippocam

import "testing"

func TestJSONObject(t *testing.T) {
	cases := []struct {
		name, text, want string
		ok               bool
	}{
		{"bare", ` {"a":1} `, `{"a":1}`, true},
		// A real PRECIP answer quoted test output between fences inside its memory string: the
		// fence must not be taken for the answer's own.
		{"fence inside a string", "{\"memory\": \"I ran it:\\n```\\nFAIL {x}\\n```\\ndone\"}", "{\"memory\": \"I ran it:\\n```\\nFAIL {x}\\n```\\ndone\"}", true},
		{"fenced", "Here it is:\n```json\n{\"a\": [1]}\n```\nThanks.", `{"a": [1]}`, true},
		{"prose around", `Sure. {"skip": true} That is all.`, `{"skip": true}`, true},
		{"fenced but broken, whole text valid after prose", "```\n{broken\n```", "", false},
		{"none", "no object here", "", false},
	}
	for _, c := range cases {
		got, ok := JSONObject(c.text)
		if ok != c.ok || (c.ok && got != c.want) {
			t.Errorf("%s: JSONObject = %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
