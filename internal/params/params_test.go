package params_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/params"
)

func TestApply(t *testing.T) {
	rules := params.Join(
		params.Kept("temperature"),
		params.Dropped("top_k"),
		[]params.Rule{
			{Field: "stop_sequences", Action: params.Translate, Translate: params.Rename("stop")},
			{Field: "effort", Action: params.Translate, Translate: func(v json.RawMessage, out params.Fields, c params.Call) bool {
				if c.Model != "o3" {
					return false
				}
				return params.Set(out, "reasoning_effort", v)
			}},
			{Field: "max_tokens", Action: params.Read},
		},
	)
	extra := params.Fields{
		"temperature": json.RawMessage(`0.50`), "top_k": json.RawMessage(`5`), "stop_sequences": json.RawMessage(`["x"]`),
		"effort": json.RawMessage(`"high"`), "max_tokens": json.RawMessage(`9`), "unknown": json.RawMessage(`{"a" : 1}`),
		"gone": json.RawMessage(`null`),
	}
	for _, c := range []struct {
		name    string
		to      hippocam.Format
		model   string
		want    string
		dropped []string
	}{
		{"OtherFormat", hippocam.FormatChat, "m", `{"stop":["x"],"temperature":0.50}`, []string{"effort", "max_tokens", "top_k", "unknown"}},
		{"SameFormat", hippocam.FormatAnthropic, "o3", `{"reasoning_effort":"high","stop":["x"],"temperature":0.50,"unknown":{"a" : 1}}`, []string{"max_tokens", "top_k"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			table := &params.Table{From: hippocam.FormatAnthropic, To: c.to, Rules: rules}
			out, dropped := table.Apply(extra, params.Call{Model: c.model})
			b, err := out.JSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.want {
				t.Errorf("fields %s, want %s (byte for byte)", b, c.want)
			}
			if !reflect.DeepEqual(dropped, c.dropped) {
				t.Errorf("dropped %q, want %q", dropped, c.dropped)
			}
		})
	}
}

func TestMarkdown(t *testing.T) {
	table := &params.Table{From: hippocam.FormatChat, To: hippocam.FormatAnthropic, Rules: params.Join(
		params.Kept("a", "b"),
		[]params.Rule{{Field: "c", Action: params.Translate, Becomes: "`d`"}},
		params.Dropped("e", "f"),
	)}
	want := "| fields | sent as |\n| --- | --- |\n| `a`, `b` | kept |\n| `c` | `d` |\n| `e`, `f` | left out |\n| any other field | left out |\n"
	if got := table.Markdown(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains((&params.Table{From: hippocam.FormatChat, To: hippocam.FormatChat}).Markdown(), "| any other field | kept |") {
		t.Error("an unlisted field of the same format is not shown as kept")
	}
}
