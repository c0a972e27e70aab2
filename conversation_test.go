package hippocam

import "testing"

func TestCheckText(t *testing.T) {
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{`{"a":"plain"}`, true},
		{`{"a":"é 世界 👋"}`, true},
		{`{"a":"\u00e9 \ud83d\udc4b"}`, true},
		{`{"a":"\\ud800"}`, true}, // an escaped backslash, then text
		{`{"a":"\ud800"}`, false},
		{`{"a":"\udc00 x"}`, false},
		{`{"a":"\ud83d\u0041"}`, false},
		{"{\"a\":\"\xff\"}", false},
		{"{\"a\":\"\xed\xa0\x80\"}", false}, // a surrogate encoded as UTF-8
	} {
		err := CheckText([]byte(c.body))
		if (err == nil) != c.ok {
			t.Errorf("CheckText(%q) = %v, want ok %v", c.body, err, c.ok)
		}
	}
}
