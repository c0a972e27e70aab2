package httpapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/hippocam/hippocam"
)

// Tools and history items the upstream cannot take are left out of its requests (the adapters
// decide, by hippocam.UpstreamTool and the parts each format carries); the response says so in
// two headers, and a log line names them.
const (
	// OmittedToolsHeader names, comma-separated, the request's tools that did not reach the
	// upstream (a web_search sent to a chat-completions upstream…).
	OmittedToolsHeader = "Hippocam-Omitted-Tools"
	// OmittedItemsHeader names the types of the history items kept but not sent upstream,
	// since its format has no place for them (a web_search_call of a Responses history…).
	OmittedItemsHeader = "Hippocam-Omitted-Items"
)

// upstreamFormat is the format of the upstream the main model is called through.
func (s *Server) upstreamFormat() hippocam.Format {
	if s.cfg.UpstreamFormat == "" {
		return hippocam.FormatChat
	}
	return s.cfg.UpstreamFormat
}

// noteOmitted sets the omission headers for conv and logs what is left out.
func (s *Server) noteOmitted(w http.ResponseWriter, r *http.Request, tenant, name string, conv *hippocam.Conversation) {
	up := s.upstreamFormat()
	tools := hippocam.OmittedTools(conv.Tools, up)
	items := omittedItems(conv, up)
	if len(tools) == 0 && len(items) == 0 {
		return
	}
	if len(tools) > 0 {
		w.Header().Set(OmittedToolsHeader, strings.Join(tools, ", "))
	}
	if len(items) > 0 {
		w.Header().Set(OmittedItemsHeader, strings.Join(items, ", "))
	}
	s.log.Info("left out of the upstream request", "route", r.URL.Path, "tenant", tenant, "session", name,
		"upstream", string(up), "tools", tools, "items", items)
}

// omittedItems names, once each, the types of the parts of conv's messages that an upstream of
// format up has no place for: the items of a provider's tools (web_search_call,
// server_tool_use…) kept from a history of another format. Images, audio and files, which every
// format carries, reasoning and thinking, which are the model's and documented as such, and
// declarations of tools, whose tools are sent as tools, are not named.
func omittedItems(conv *hippocam.Conversation, up hippocam.Format) []string {
	var out []string
	for i := range conv.Messages {
		for _, p := range conv.Messages[i].Parts {
			if p.Format == "" || p.Format == up || p.Raw == "" {
				continue
			}
			switch p.Type {
			case hippocam.PartImage, hippocam.PartAudio, hippocam.PartFile, hippocam.PartTools:
				continue
			}
			if unnamedPart(p.Type) { // a format's own (format.go)
				continue
			}
			if !slices.Contains(out, p.Type) {
				out = append(out, p.Type)
			}
		}
	}
	return out
}
