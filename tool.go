package hippocam

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
)

// ToolKind says how a tool is called.
type ToolKind string

// The tool kinds.
const (
	// ToolFunction (the zero value) takes JSON arguments that follow its Parameters schema.
	ToolFunction ToolKind = ""
	// ToolCustom takes free text (OpenAI custom tools), possibly held to a grammar: its
	// Parameters, when set, are the input format as the client sent it.
	ToolCustom ToolKind = "custom"
	// ToolProvider is a tool the provider defines: one it runs itself (OpenAI web_search,
	// file_search, mcp…; Anthropic web_search_*, web_fetch_*, code_execution_*…) or one it
	// specifies and the client runs (Anthropic bash_*, text_editor_*, memory_*, computer_*).
	ToolProvider ToolKind = "provider"
)

// How each kind of tool reaches an upstream (UpstreamTool):
//
//   - A function goes as a function; one declared in a namespace goes under FlatName, since
//     neither chat completions nor Messages knows namespaces.
//   - A custom tool goes as a function with one string parameter, "input", its grammar (if any)
//     quoted in its description; the upstream's call is given back as a custom call whose input
//     is that string.
//   - A provider tool goes byte for byte to an upstream of the format it was declared in. To
//     another format, Anthropic's bash, text editor and memory tools go as functions with the
//     input schema Anthropic documents for them (their calls come back as ordinary calls, as
//     Anthropic sends them); every other provider tool is left out.

// customInput is the parameter a custom tool's text travels in, at an upstream that has no
// custom tools.
const customInput = "input"

// customSchema is the schema of a custom tool sent as a function.
const customSchema = `{"type":"object","properties":{"input":{"type":"string","description":"The tool's input, as free text."}},"required":["input"],"additionalProperties":false}`

// anthropicClientSchemas are the input schemas of the tools Anthropic defines and the client
// runs, by the prefix of their type, as Anthropic documents them.
var anthropicClientSchemas = []struct{ prefix, description, schema string }{
	{"bash_", "Run a command in a persistent bash shell; restart the shell with restart: true.",
		`{"type":"object","properties":{"command":{"type":"string","description":"The bash command to run."},"restart":{"type":"boolean","description":"Restart the shell instead of running a command."}}}`},
	{"text_editor_", "View, create and edit files: view, create, str_replace, insert (and undo_edit where offered).",
		`{"type":"object","properties":{"command":{"type":"string","enum":["view","create","str_replace","insert","undo_edit"]},"path":{"type":"string"},"file_text":{"type":"string"},"old_str":{"type":"string"},"new_str":{"type":"string"},"insert_line":{"type":"integer"},"insert_text":{"type":"string"},"view_range":{"type":"array","items":{"type":"integer"}}},"required":["command","path"]}`},
	{"memory_", "Keep notes in a /memories directory across conversations: view, create, str_replace, insert, delete, rename.",
		`{"type":"object","properties":{"command":{"type":"string","enum":["view","create","str_replace","insert","delete","rename"]},"path":{"type":"string"},"file_text":{"type":"string"},"old_str":{"type":"string"},"new_str":{"type":"string"},"insert_line":{"type":"integer"},"insert_text":{"type":"string"},"view_range":{"type":"array","items":{"type":"integer"}},"old_path":{"type":"string"},"new_path":{"type":"string"}},"required":["command"]}`},
}

// maxToolName is the longest tool name every upstream accepts.
const maxToolName = 64

// FlatName is the name a tool declared in a namespace goes by at an upstream without
// namespaces: namespace, "__" (unless the namespace already ends with it), name. Characters
// other than letters, digits, '_' and '-' become '_', and a name longer than 64 bytes is cut
// and ends with a hash of the whole, so that it stays unique. Without a namespace, the name is
// returned as it is.
func FlatName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	full := namespace + "__" + name
	if strings.HasSuffix(namespace, "__") {
		full = namespace + name
	}
	b := []byte(full)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) <= maxToolName {
		return string(b)
	}
	h := fnv.New32a()
	h.Write([]byte(full))
	return fmt.Sprintf("%s_%08x", b[:maxToolName-9], h.Sum32())
}

// UpstreamName is the name t goes by at an upstream.
func (t *Tool) UpstreamName() string { return FlatName(t.Namespace, t.Name) }

// UpstreamTool returns t as an upstream of format f receives it (see the kinds above), and
// false when t cannot reach it. A tool returned with Raw set is to be sent as Raw, byte for
// byte; otherwise as a function from Name, Description and Parameters.
func UpstreamTool(t Tool, f Format) (Tool, bool) {
	switch t.Kind {
	case ToolFunction:
		if t.Namespace == "" && len(t.Raw) == 0 {
			return t, true
		}
		return Tool{Name: t.UpstreamName(), Description: t.Description, Parameters: t.Parameters}, true
	case ToolCustom:
		return Tool{Name: t.UpstreamName(), Description: customDescription(t), Parameters: json.RawMessage(customSchema)}, true
	case ToolProvider:
		if t.Format == f && len(t.Raw) > 0 {
			return t, true
		}
		if t.Format == FormatAnthropic {
			for _, s := range anthropicClientSchemas {
				if strings.HasPrefix(t.Type, s.prefix) {
					return Tool{Name: t.Name, Description: s.description, Parameters: json.RawMessage(s.schema)}, true
				}
			}
		}
	}
	return Tool{}, false
}

// customDescription is a custom tool's description, with the grammar its input must follow
// when it has one.
func customDescription(t Tool) string {
	d := t.Description
	note := "Pass the tool's input as free text in the \"input\" parameter."
	var f struct {
		Type       string `json:"type"`
		Syntax     string `json:"syntax"`
		Definition string `json:"definition"`
		Grammar    *struct {
			Syntax     string `json:"syntax"`
			Definition string `json:"definition"`
		} `json:"grammar"`
	}
	if len(t.Parameters) > 0 && json.Unmarshal(t.Parameters, &f) == nil && f.Type == "grammar" {
		if f.Grammar != nil { // the chat completions shape
			f.Syntax, f.Definition = f.Grammar.Syntax, f.Grammar.Definition
		}
		if f.Definition != "" {
			note += fmt.Sprintf(" The input must follow this %s grammar:\n%s", f.Syntax, f.Definition)
		}
	}
	if d == "" {
		return note
	}
	return d + "\n\n" + note
}

// OmittedTools names the tools that cannot reach an upstream of format f, in order.
func OmittedTools(tools []Tool, f Format) []string {
	var out []string
	for _, t := range tools {
		if _, ok := UpstreamTool(t, f); !ok {
			out = append(out, t.Name)
		}
	}
	return out
}

// UpstreamToolChoice is a request's tool choice as an upstream of format f receives it: a
// choice naming a tool becomes that tool's upstream name, or "auto" when the tool cannot reach
// f; the other choices are kept.
func UpstreamToolChoice(tools []Tool, choice string, f Format) string {
	switch choice {
	case "", "auto", "none", "required":
		return choice
	}
	for _, t := range tools {
		if t.Name != choice {
			continue
		}
		if u, ok := UpstreamTool(t, f); ok {
			return u.Name
		}
		return "auto"
	}
	return choice
}

// UpstreamCall returns c as it is sent in a history to an upstream without namespaces or
// custom tools: under its FlatName, a custom call's input as the arguments {"input": TEXT}.
func UpstreamCall(c ToolCall) ToolCall {
	if c.Kind == ToolFunction && c.Namespace == "" {
		return c
	}
	out := ToolCall{ID: c.ID, Name: FlatName(c.Namespace, c.Name), Arguments: c.Arguments}
	if c.Kind == ToolCustom {
		b, _ := json.Marshal(map[string]string{customInput: c.Arguments})
		out.Arguments = string(b)
	}
	return out
}

// SpecialCalls reports whether some message of msgs holds a call that UpstreamCall changes.
func SpecialCalls(msgs []Message) bool {
	for i := range msgs {
		for _, c := range msgs[i].ToolCalls {
			if c.Kind != ToolFunction || c.Namespace != "" {
				return true
			}
		}
	}
	return false
}

// RestoreCalls gives the calls of an upstream's answer the form the client declared their tools
// in: a call to a tool of a namespace gets the tool's own name and its namespace, a call to a
// custom tool becomes a custom call whose input is the text of its "input" argument (or the
// arguments themselves, when they hold no such string). tools are the request's tools, f the
// upstream's format. Other calls are left as they are.
func RestoreCalls(tools []Tool, f Format, m *Message) {
	if len(m.ToolCalls) == 0 {
		return
	}
	var byName map[string]*Tool
	for i := range tools {
		t := &tools[i]
		if t.Namespace == "" && t.Kind != ToolCustom {
			continue
		}
		if _, ok := UpstreamTool(*t, f); !ok {
			continue
		}
		if byName == nil {
			byName = map[string]*Tool{}
		}
		if _, dup := byName[t.UpstreamName()]; !dup {
			byName[t.UpstreamName()] = t
		}
	}
	if byName == nil {
		return
	}
	for i := range m.ToolCalls {
		c := &m.ToolCalls[i]
		t, ok := byName[c.Name]
		if !ok {
			continue
		}
		c.Name, c.Namespace = t.Name, t.Namespace
		if t.Kind == ToolCustom {
			c.Kind = ToolCustom
			var in map[string]json.RawMessage
			var s string
			if json.Unmarshal([]byte(c.Arguments), &in) == nil && json.Unmarshal(in[customInput], &s) == nil {
				c.Arguments = s
			}
		}
	}
}
