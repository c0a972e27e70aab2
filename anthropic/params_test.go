package anthropic_test

import (
	"encoding/json"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/anthropic"
	"github.com/hippocam/hippocam/internal/params"
)

// An OpenAI client's temperature and top_p reach a Messages upstream as the temperature alone
// (recent Claude models refuse the two together); top_p alone goes on, and a Messages client's
// own pair is its own business.
func TestTopPWithTemperature(t *testing.T) {
	for _, c := range []struct {
		name string
		from hippocam.Format
		in   string
		want string
	}{
		{"ChatBoth", hippocam.FormatChat, `{"temperature":0.5,"top_p":0.9}`, `{"temperature":0.5}`},
		{"ResponsesBoth", hippocam.FormatResponses, `{"temperature":0.5,"top_p":0.9}`, `{"temperature":0.5}`},
		{"ChatTopPAlone", hippocam.FormatChat, `{"top_p":0.9}`, `{"top_p":0.9}`},
		{"MessagesBoth", hippocam.FormatAnthropic, `{"temperature":0.5,"top_p":0.9}`, `{"temperature":0.5,"top_p":0.9}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var in params.Fields
			if err := json.Unmarshal([]byte(c.in), &in); err != nil {
				t.Fatal(err)
			}
			out, _ := anthropic.Params(c.from).Apply(in, params.Call{Model: "claude-x"})
			b, _ := json.Marshal(out)
			if got := hippocam.CanonicalJSON(string(b)); got != hippocam.CanonicalJSON(c.want) {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}
