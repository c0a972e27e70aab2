package wire

import (
	"encoding/json"

	"github.com/hippocam/hippocam"
)

// A tool_choice of type allowed_tools lets the model call only the tools it lists, while the
// request keeps its whole tool list (so that the list stays a cacheable prefix). The domain's
// ToolChoice holds only its mode; the list is applied by leaving the other tools out of the
// conversation, which every upstream understands and which has the same effect on the answer.

// allowedTools reads the list of an allowed_tools choice in either OpenAI shape, chat's
// ({"type":"allowed_tools","allowed_tools":{"mode","tools":[{"type":"function","function":{"name"}}]}})
// or Responses' ({"type":"allowed_tools","mode","tools":[{"type":"function","name"}]}): the
// tools' names, and the types of listed tools that carry no name (web_search…). ok is false
// when the choice is not allowed_tools or lists nothing.
func allowedTools(raw json.RawMessage) (names, types map[string]bool, ok bool) {
	var c struct {
		Type         string            `json:"type"`
		Tools        []json.RawMessage `json:"tools"`
		AllowedTools struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"allowed_tools"`
	}
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &c) != nil || c.Type != "allowed_tools" {
		return nil, nil, false
	}
	listed := append(c.Tools, c.AllowedTools.Tools...)
	if len(listed) == 0 {
		return nil, nil, false
	}
	names, types = map[string]bool{}, map[string]bool{}
	for _, t := range listed {
		var d struct {
			Type     string `json:"type"`
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
			Custom struct {
				Name string `json:"name"`
			} `json:"custom"`
		}
		if json.Unmarshal(t, &d) != nil {
			continue
		}
		switch name := d.Name + d.Function.Name + d.Custom.Name; {
		case name != "":
			names[name] = true
		case d.Type != "":
			types[d.Type] = true
		}
	}
	return names, types, true
}

// restrictTools leaves out of conv the tools an allowed_tools choice does not list: a tool is
// kept when its name, its namespace or (for a tool without a name of its own) its type is listed.
func restrictTools(conv *hippocam.Conversation, choice json.RawMessage) {
	names, types, ok := allowedTools(choice)
	if !ok {
		return
	}
	kept := conv.Tools[:0:0]
	for _, t := range conv.Tools {
		if names[t.Name] || (t.Namespace != "" && names[t.Namespace]) || types[t.Type] {
			kept = append(kept, t)
		}
	}
	conv.Tools = kept
}
