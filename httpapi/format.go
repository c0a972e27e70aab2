package httpapi

import (
	"net/http"
	"strings"

	"github.com/hippocam/hippocam"
)

// Inbound formats. Each wire format agents speak to the proxy is one value of inboundFormat,
// written in that format's own file (chat.go, responses.go, messages.go), and one line of
// inboundFormats. Everything the shared code needs to know of a format is asked through the
// interface: its routes, which paths are its own, how it words and writes a refusal, how its
// clients send their key. Reading a request and writing its answer (streamFormat) are the
// format's handlers' business; the shared code sees only the conversation they read.

// inboundFormats are the formats the proxy serves. A new format adds itself here.
var inboundFormats = []inboundFormat{chatFormat{}, responsesFormat{}, messagesFormat{}}

// defaultFormat answers the paths no format claims (other /v1/ paths, the REST API under
// /api/) and the REST API's errors: in the chat format's error JSON.
const defaultFormat = hippocam.FormatChat

// inboundFormat is one wire format agents speak to the proxy. Methods a format has no use for
// come from formatDefaults; openAIErrors gives OpenAI's error JSON.
type inboundFormat interface {
	// id names the format, as the messages' origins and the refusals' callers name it.
	id() hippocam.Format
	// prefixes are the path prefixes of the format's routes: a request under one of them that
	// fails before a handler knows its format (a missing key, a wrong method, an unknown path)
	// is answered in this format's error JSON.
	prefixes() []string
	// routes are the routes the format serves.
	routes() []route

	// tell words a refusal in the format's terms. The shared code words every refusal as
	// OpenAI does (status, error type, code, param); a format of another provider maps them to
	// its own.
	tell(r refusal) refusal
	// tooLong words the refusal of a request whose context cannot fit the model's window:
	// needed and window are the request's tokens and the window (zero when unknown, and detail
	// is then to be said instead). param is OpenAI's error param ("" for none).
	tooLong(needed, window int, detail string) (message, param string)
	// writeRefusal writes r (as tell worded it) as the format's error JSON with r's status.
	writeRefusal(w http.ResponseWriter, r refusal)
	// refusesInStream reports whether a streamed request refused before anything was written
	// is answered with the stream's own failure event instead of an error response.
	refusesInStream(r refusal) bool

	// keyHeader is the header besides Authorization: Bearer in which the format's clients send
	// their API key ("" for none). Every such header is accepted on every route.
	keyHeader() string
	// sentBy reports whether r, on a path of no format's, was sent by one of the format's
	// clients (by its headers): a pass-through to an upstream of this format that fails is then
	// answered in this format's error JSON.
	sentBy(r *http.Request) bool
	// unnamedParts are the format's part types that are never named as left out of an
	// upstream request of another format: the model's own (reasoning, thinking), documented as
	// such, and marks of the format's own (an Anthropic tool result's error).
	unnamedParts() []string
}

// route is one route of a format: the ServeMux pattern ("POST /v1/messages"), the route's
// name in metrics and logs, and its handler.
type route struct {
	pattern string
	name    string
	handler func(s *Server, w http.ResponseWriter, r *http.Request, tenant string)
}

// formatDefaults gives the methods of inboundFormat that a format has no use for: no key
// header of its own, no pass-through clients recognized, no part types left unnamed, every
// refusal an error response.
type formatDefaults struct{}

func (formatDefaults) keyHeader() string            { return "" }
func (formatDefaults) sentBy(*http.Request) bool    { return false }
func (formatDefaults) unnamedParts() []string       { return nil }
func (formatDefaults) refusesInStream(refusal) bool { return false }

// openAIErrors gives the refusals of OpenAI's formats: worded as the shared code words them,
// written as OpenAI's {"error":{"message","type","param","code"}}.
type openAIErrors struct{}

func (openAIErrors) tell(r refusal) refusal { return r }

func (openAIErrors) writeRefusal(w http.ResponseWriter, r refusal) {
	writeJSON(w, r.status, r.body())
}

// inboundOf returns the format named f; the default format for a name of none.
func inboundOf(f hippocam.Format) inboundFormat {
	fallback := inboundFormats[0]
	for _, in := range inboundFormats {
		switch in.id() {
		case f:
			return in
		case defaultFormat:
			fallback = in
		}
	}
	return fallback
}

// formatOf is the inbound format a path belongs to, for routes that fail before a handler
// knows it (authentication, unknown routes): the format whose prefix it is under, else the
// default format.
func formatOf(path string) hippocam.Format {
	for _, in := range inboundFormats {
		for _, p := range in.prefixes() {
			if strings.HasPrefix(path, p) {
				return in.id()
			}
		}
	}
	return defaultFormat
}

// knownPaths are the paths of the routes that exist, with their method, for the 405 of a
// wrong method: every format's routes without wildcards, and GET /v1/models.
var knownPaths = formatPaths(map[string]string{"/v1/models": "GET"})

// formatPaths adds the paths of the formats' routes to paths.
func formatPaths(paths map[string]string) map[string]string {
	for _, in := range inboundFormats {
		for _, rt := range in.routes() {
			method, path, _ := strings.Cut(rt.pattern, " ")
			if !strings.Contains(path, "{") {
				paths[path] = method
			}
		}
	}
	return paths
}

// clientKey returns the API key r sends: Authorization: Bearer KEY, else a format's own key
// header.
func clientKey(r *http.Request) (string, bool) {
	const prefix = "Bearer "
	if h := r.Header.Get("Authorization"); len(h) > len(prefix) && h[:len(prefix)] == prefix {
		return h[len(prefix):], true
	}
	for _, name := range keyHeaders {
		if k := r.Header.Get(name); k != "" {
			return k, true
		}
	}
	return "", false
}

// sentCredentials reports whether h carries a client's credentials: an Authorization header of
// any scheme, or a format's own key header.
func sentCredentials(h http.Header) bool {
	if h.Get("Authorization") != "" {
		return true
	}
	for _, name := range keyHeaders {
		if h.Get(name) != "" {
			return true
		}
	}
	return false
}

// keyHeaders are the formats' own key headers, gathered once: every request reads them.
var keyHeaders = func() []string {
	var out []string
	for _, in := range inboundFormats {
		if h := in.keyHeader(); h != "" {
			out = append(out, h)
		}
	}
	return out
}()

// keyHint says how to send a key, for the refusal of a request without a valid one.
func keyHint() string {
	hint := "send Authorization: Bearer KEY"
	for _, h := range keyHeaders {
		hint += " (or " + strings.ToLower(h) + ": KEY)"
	}
	return hint
}

// unnamedParts are every format's unnamedParts, gathered once.
var unnamedParts = func() map[string]bool {
	out := map[string]bool{}
	for _, in := range inboundFormats {
		for _, t := range in.unnamedParts() {
			out[t] = true
		}
	}
	return out
}()

// unnamedPart reports whether typ is one of a format's unnamedParts.
func unnamedPart(typ string) bool { return unnamedParts[typ] }
