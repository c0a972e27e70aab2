package hippocam_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
)

func TestFlatName(t *testing.T) {
	long := strings.Repeat("n", 70)
	for _, tc := range []struct{ ns, name, want string }{
		{"", "shell", "shell"},
		{"crm", "lookup", "crm__lookup"},
		{"mcp__github__", "create_issue", "mcp__github__create_issue"},
		{"web.run", "open page", "web_run__open_page"},
	} {
		if got := hippocam.FlatName(tc.ns, tc.name); got != tc.want {
			t.Errorf("FlatName(%q, %q) = %q, want %q", tc.ns, tc.name, got, tc.want)
		}
	}
	a, b := hippocam.FlatName("ns", long+"a"), hippocam.FlatName("ns", long+"b")
	if len(a) != 64 || len(b) != 64 || a == b {
		t.Errorf("long names: %q and %q, want two different names of 64 bytes", a, b)
	}
}

func TestUpstreamTool(t *testing.T) {
	fn := hippocam.Tool{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}
	nsFn := hippocam.Tool{Name: "lookup", Namespace: "crm", Parameters: json.RawMessage(`{"type":"object"}`),
		Format: hippocam.FormatResponses, Raw: json.RawMessage(`{"type":"namespace"}`)}
	custom := hippocam.Tool{Name: "apply_patch", Kind: hippocam.ToolCustom, Type: "custom", Description: "Patch files.",
		Parameters: json.RawMessage(`{"type":"grammar","syntax":"lark","definition":"start: x"}`),
		Format:     hippocam.FormatResponses, Raw: json.RawMessage(`{"type":"custom","name":"apply_patch"}`)}
	search := hippocam.Tool{Name: "web_search", Kind: hippocam.ToolProvider, Type: "web_search",
		Format: hippocam.FormatResponses, Raw: json.RawMessage(`{"type":"web_search"}`)}
	aSearch := hippocam.Tool{Name: "web_search", Kind: hippocam.ToolProvider, Type: "web_search_20250305",
		Format: hippocam.FormatAnthropic, Raw: json.RawMessage(`{"type":"web_search_20250305","name":"web_search","max_uses":5}`)}
	bash := hippocam.Tool{Name: "bash", Kind: hippocam.ToolProvider, Type: "bash_20250124",
		Format: hippocam.FormatAnthropic, Raw: json.RawMessage(`{"type":"bash_20250124","name":"bash"}`)}
	for _, tc := range []struct {
		name     string
		tool     hippocam.Tool
		f        hippocam.Format
		ok       bool
		wantName string
		wantRaw  bool   // sent byte for byte
		inSchema string // a piece of the parameters
		inDesc   string // a piece of the description
	}{
		{"Function", fn, hippocam.FormatChat, true, "f", false, `"object"`, ""},
		{"NamespacedFunction", nsFn, hippocam.FormatAnthropic, true, "crm__lookup", false, `"object"`, ""},
		{"CustomAsFunction", custom, hippocam.FormatChat, true, "apply_patch", false, `"input"`, "start: x"},
		{"HostedLeftOut", search, hippocam.FormatChat, false, "", false, "", ""},
		{"HostedLeftOutOfAnthropic", search, hippocam.FormatAnthropic, false, "", false, "", ""},
		{"ServerToolPassedThrough", aSearch, hippocam.FormatAnthropic, true, "web_search", true, "", ""},
		{"ServerToolLeftOut", aSearch, hippocam.FormatChat, false, "", false, "", ""},
		{"BashAsFunction", bash, hippocam.FormatChat, true, "bash", false, `"command"`, ""},
		{"BashPassedThrough", bash, hippocam.FormatAnthropic, true, "bash", true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, ok := hippocam.UpstreamTool(tc.tool, tc.f)
			if ok != tc.ok {
				t.Fatalf("reaches = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if u.Name != tc.wantName || (len(u.Raw) > 0) != tc.wantRaw {
				t.Errorf("got name %q raw %q, want %q (raw: %v)", u.Name, u.Raw, tc.wantName, tc.wantRaw)
			}
			if !strings.Contains(string(u.Parameters), tc.inSchema) || !strings.Contains(u.Description, tc.inDesc) {
				t.Errorf("got parameters %s description %q, want them to hold %q and %q", u.Parameters, u.Description, tc.inSchema, tc.inDesc)
			}
		})
	}
	if got := hippocam.OmittedTools([]hippocam.Tool{fn, search, custom, aSearch}, hippocam.FormatChat); strings.Join(got, ",") != "web_search,web_search" {
		t.Errorf("OmittedTools = %q", got)
	}
	tools := []hippocam.Tool{fn, nsFn, search}
	for choice, want := range map[string]string{"auto": "auto", "lookup": "crm__lookup", "web_search": "auto", "f": "f", "recall": "recall"} {
		if got := hippocam.UpstreamToolChoice(tools, choice, hippocam.FormatChat); got != want {
			t.Errorf("UpstreamToolChoice(%q) = %q, want %q", choice, got, want)
		}
	}
}

func TestUpstreamCallAndRestore(t *testing.T) {
	tools := []hippocam.Tool{
		{Name: "lookup", Namespace: "crm"},
		{Name: "apply_patch", Kind: hippocam.ToolCustom},
		{Name: "plain"},
	}
	client := []hippocam.ToolCall{
		{ID: "1", Name: "lookup", Namespace: "crm", Arguments: `{"q":1}`},
		{ID: "2", Name: "apply_patch", Kind: hippocam.ToolCustom, Arguments: "*** Begin Patch\n\"x\"\n"},
		{ID: "3", Name: "plain", Arguments: `{}`},
	}
	m := hippocam.Message{Role: hippocam.RoleAssistant}
	for _, c := range client {
		m.ToolCalls = append(m.ToolCalls, hippocam.UpstreamCall(c))
	}
	want := []string{"crm__lookup", "apply_patch", "plain"}
	for i, c := range m.ToolCalls {
		if c.Name != want[i] || c.Namespace != "" || c.Kind != "" {
			t.Errorf("upstream call %d = %+v, want name %q and no namespace or kind", i, c, want[i])
		}
	}
	if m.ToolCalls[1].Arguments != `{"input":"*** Begin Patch\n\"x\"\n"}` {
		t.Errorf("custom call arguments = %s", m.ToolCalls[1].Arguments)
	}
	if !hippocam.SpecialCalls([]hippocam.Message{{ToolCalls: client}}) || hippocam.SpecialCalls([]hippocam.Message{m}) {
		t.Error("SpecialCalls does not tell client calls from upstream calls")
	}
	hippocam.RestoreCalls(tools, hippocam.FormatChat, &m)
	for i := range client {
		if m.ToolCalls[i] != client[i] {
			t.Errorf("restored call %d = %+v, want %+v", i, m.ToolCalls[i], client[i])
		}
	}
}
