package httpapi

import (
	"net/http"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/sessions"
)

// The REST API's JSON shapes (the viewer reads them; scripts may too).

// messageJSON is one message of a context, a layer or an expansion, as the MCP server shows it
// too (sessions.MessageView).
type messageJSON = sessions.MessageView

// usageJSON is one role's usage with its cache share.
type usageJSON struct {
	hippocam.RoleUsage
	CacheShare float64 `json:"cache_share"`
}

func usageOf(u hippocam.RoleUsage) usageJSON {
	share := 0.0
	if u.Input > 0 {
		share = float64(u.CachedInput) / float64(u.Input)
	}
	return usageJSON{RoleUsage: u, CacheShare: share}
}

type sessionJSON struct {
	ID             string                          `json:"id"`
	CreatedAt      time.Time                       `json:"created_at"`
	UpdatedAt      time.Time                       `json:"updated_at"`
	Version        int64                           `json:"version"`
	ContextWindow  int                             `json:"context_window"`
	ContextTokens  int                             `json:"context_tokens"`
	Context        []messageJSON                   `json:"context"`
	Stack          hippocam.IntentStack            `json:"stack"`
	StackLog       []hippocam.StackEvent           `json:"stack_log"`
	Usage          map[hippocam.CallRole]usageJSON `json:"usage"`
	Totals         usageJSON                       `json:"totals"`
	Consolidations hippocam.Consolidations         `json:"consolidations"`
	// Framing is the current framing (the agent's system and developer messages); Fork says
	// which session this one forked from and after how many transcript messages.
	Framing []messageJSON  `json:"framing"`
	Fork    *hippocam.Fork `json:"fork,omitempty"`
	// Learning is the session as a task of the learning layer: its routing decision, its
	// advisory and, once ended, its outcome. Absent for a session that learning never saw.
	Learning *hippocam.TaskLearning `json:"learning,omitempty"`
	// Title is the session's first user line; Client what its client said of the conversation
	// it belongs to, Kind its kind there ("title", "subagent"…), and Group and Parent its place
	// among the tenant's sessions (hippocam.PlaceSessions).
	Title  string           `json:"title"`
	Kind   string           `json:"kind,omitempty"`
	Client *hippocam.Client `json:"client,omitempty"`
	hippocam.ClientPlace
	// Request is the last main request the session sent, in tokens, part by part (framing,
	// Hippocam's system prompt, tools, recall tools, memory, messages), with the input the
	// provider reported for it: what the context meter shows. Absent before the first answer.
	Request *hippocam.RequestSize `json:"request,omitempty"`
	// Recording is where the session's recorded exchanges with the upstream are, when the
	// server records them (serve --record) and the session has some.
	Recording *recordingJSON `json:"recording,omitempty"`
}

// sessionInfoJSON is one session of GET /api/sessions: its summary, its title and kind, and its
// place in its client conversation.
type sessionInfoJSON struct {
	hippocam.SessionInfo
	Title string `json:"title"`
	Kind  string `json:"kind,omitempty"`
	hippocam.ClientPlace
}

// listSessions is GET /api/sessions: every session, most recently updated first, or with
// ?group=KEY those of one client conversation.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, tenant string) {
	list, err := s.cfg.Store.Sessions(r.Context(), tenant)
	if err != nil {
		s.fail(w, r, defaultFormat, err)
		return
	}
	places := hippocam.PlaceSessions(list)
	group, filter := r.URL.Query()["group"]
	out := make([]sessionInfoJSON, 0, len(list))
	for _, in := range list {
		j := sessionInfoJSON{SessionInfo: in, ClientPlace: places[in.ID]}
		if c := in.Client; c != nil {
			j.Title, j.Kind = c.Title, c.Kind
		}
		if filter && j.Group != group[0] {
			continue
		}
		out = append(out, j)
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
}

// getSession is GET /api/sessions/{id}: the context, the intent stack and its history, usage.
func (s *Server) getSession(w http.ResponseWriter, r *http.Request, tenant string) {
	sess, err := s.cfg.Store.Session(r.Context(), tenant, r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	out := sessionJSON{ID: sess.ID, CreatedAt: sess.CreatedAt, UpdatedAt: sess.UpdatedAt, Version: sess.Version,
		ContextWindow: s.cfg.Engine.Config().Window, Context: sessions.MessageViews(sess.Context), Stack: sess.Stack, StackLog: sess.StackLog,
		Usage: map[hippocam.CallRole]usageJSON{}, Totals: usageOf(sess.Usage.Total()), Consolidations: sess.Consolidations,
		Framing: sessions.MessageViews(sess.Transcript.Framing), Fork: sess.Transcript.Fork, Learning: sess.Transcript.Learning}
	for i := range out.Framing { // framing is stored without its size: count it as the meter does
		if m := &sess.Transcript.Framing[i]; m.Tokens == 0 {
			out.Framing[i].Tokens = hippocam.MessageTokens(engineTokens{s.cfg.Engine}, m)
		}
	}
	if out.Stack == nil {
		out.Stack = hippocam.IntentStack{}
	}
	if out.StackLog == nil {
		out.StackLog = []hippocam.StackEvent{}
	}
	for _, m := range sess.Context {
		out.ContextTokens += m.Tokens
	}
	for role, u := range sess.Usage { // a map: encoding/json writes its keys sorted
		out.Usage[role] = usageOf(u)
	}
	out.Request = sess.Transcript.Request
	out.Recording = s.recordingOf(tenant, sess.ID)
	if c := sess.Transcript.Client; c != nil {
		out.Title, out.Kind, out.Client = c.Title, c.Kind, c
	}
	out.ClientPlace = hippocam.ClientPlace{Group: sess.ID}
	if sess.Transcript.Client != nil || sess.Transcript.Fork != nil {
		// Its place depends on the tenant's other sessions (a session of old, not a fork, is a
		// conversation of its own). A listing that fails leaves it there.
		if list, err := s.cfg.Store.Sessions(r.Context(), tenant); err == nil {
			if p, ok := hippocam.PlaceSessions(list)[sess.ID]; ok {
				out.ClientPlace = p
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// engineTokens counts text as the engine does.
type engineTokens struct{ e *engine.Engine }

func (t engineTokens) Count(text string) int { return t.e.Tokens(text) }

// getNode is GET /api/sessions/{id}/nodes/{ref}: one layer of the tree.
func (s *Server) getNode(w http.ResponseWriter, r *http.Request, tenant string) {
	id, ref := r.PathValue("id"), r.PathValue("ref")
	if _, err := s.cfg.Store.Session(r.Context(), tenant, id); err != nil {
		writeError(w, err)
		return
	}
	kids, err := s.cfg.Store.Children(r.Context(), tenant, id, ref)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ref": ref, "children": sessions.MessageViews(kids)})
}

// expand is GET /api/sessions/{id}/expand: every original message, in order
// (sessions.Service.Expansion).
func (s *Server) expand(w http.ResponseWriter, r *http.Request, tenant string) {
	all, err := s.cfg.Sessions.Expansion(r.Context(), tenant, r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": all})
}

// deleteSession is DELETE /api/sessions/{id}: the session and everything archived in it.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request, tenant string) {
	id := r.PathValue("id")
	if err := s.cfg.Sessions.Delete(r.Context(), tenant, id); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// models is GET /v1/models, passed through to the upstream.
func (s *Server) models(w http.ResponseWriter, r *http.Request, tenant string) {
	if s.proxy != nil {
		s.proxy.ServeHTTP(w, r) // the upstream's own list, in its own format
		return
	}
	if s.cfg.Upstream == nil {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{}})
		return
	}
	body, err := s.cfg.Upstream.ListModels(r.Context())
	if err != nil {
		s.fail(w, r, defaultFormat, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}
