package regression

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

var forbidden = []string{"obs ", "counts ", "det ", "estimate", "feedback:", "#bind", "forecast ", "curve ", "entity "}

func TestContracts(t *testing.T) {
	rt := Runtime{}
	for name, text := range map[string]string{
		"adapter":   rt.AdapterContract(),
		"extractor": rt.ExtractorContract(&salesBindings),
		"bare":      rt.ExtractorContract(&Bindings{Target: "q", Family: Real}),
	} {
		for _, line := range strings.Split(text, "\n") {
			for _, f := range forbidden {
				if strings.HasPrefix(strings.TrimSpace(line), f) {
					t.Errorf("%s contract: line %q starts with %q", name, line, f)
				}
			}
		}
	}
	if !strings.Contains(rt.ExtractorContract(&salesBindings), "store, week, channel") {
		t.Error("the extractor contract does not name the bound dimensions")
	}
	if rt.Name() != "regression" || rt.Operator() != "hierarchical_regression_v1" || rt.Description() == "" {
		t.Error("name, operator or description")
	}
}

func TestSchemasStrict(t *testing.T) {
	rt := Runtime{}
	for name, raw := range map[string]json.RawMessage{
		"bindings": rt.BindingsSchema(),
		"batch":    rt.BatchSchema(&salesBindings),
		"bare":     rt.BatchSchema(&Bindings{Target: "q", Family: Real}),
	} {
		var schema any
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatalf("%s schema: %v", name, err)
		}
		strict(t, name, schema)
	}
	var batch struct {
		Properties struct {
			Outcomes struct {
				Items struct {
					Properties struct {
						Dims struct {
							Required []string `json:"required"`
						} `json:"dims"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"outcomes"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(rt.BatchSchema(&salesBindings), &batch); err != nil {
		t.Fatal(err)
	}
	if got := batch.Properties.Outcomes.Items.Properties.Dims.Required; !slices.Equal(got, []string{"store", "week", "channel"}) {
		t.Errorf("outcome dims %q, want the bound dimensions", got)
	}
}

// strict checks that every object schema in v forbids other properties and requires all of its
// own.
func strict(t *testing.T, path string, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		if v["type"] == "object" {
			if v["additionalProperties"] != false {
				t.Errorf("%s: additionalProperties is not false", path)
			}
			props, _ := v["properties"].(map[string]any)
			list, ok := v["required"].([]any)
			if !ok {
				t.Errorf("%s: required is not a list", path)
			}
			var required []string
			for _, r := range list {
				s, _ := r.(string)
				required = append(required, s)
			}
			for p := range props {
				if !slices.Contains(required, p) {
					t.Errorf("%s: property %s is not required", path, p)
				}
			}
			if len(required) != len(props) {
				t.Errorf("%s: required %q, properties %d", path, required, len(props))
			}
		}
		for k, sub := range v {
			strict(t, path+"."+k, sub)
		}
	case []any:
		for i, sub := range v {
			strict(t, path+"["+string(rune('0'+i))+"]", sub)
		}
	}
}
