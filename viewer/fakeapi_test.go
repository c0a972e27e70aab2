package viewer_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hippocam/hippocam/viewer"
)

// fakeAPI serves the viewer beside a fixture of httpapi's REST API (testdata/*.json), and
// records the API requests the page makes. The fixture holds three sessions: "billing-fix", its
// fork "billing-fix~2" (with framing marks, a branch mark, origins and non-text parts) and
// "scratch"; extra sessions, listed only, can be added (see manySessions).
type fakeAPI struct {
	t     *testing.T
	key   string // when set, every API call needs Authorization: Bearer key
	now   time.Time
	extra []sessionSummary // listed beside the fixture's sessions; they have no detail
	// conversation lists, beside billing-fix, the other sessions of its client conversation: a
	// title request and a subagent (listed only, no detail).
	conversation bool
	// recording, when set, is billing-fix's recording (serve --record): its detail links it and
	// GET /api/sessions/billing-fix/recording serves it.
	recording string

	mu       sync.Mutex
	requests []apiRequest
	deleted  map[string]bool
	bumps    int // how many times the session "billing-fix" changed since the fixture
}

type apiRequest struct {
	Method, Path, Auth string
}

// sessionSummary is one entry of GET /api/sessions (hippocam.SessionInfo).
type sessionSummary struct {
	Tenant         string         `json:"tenant"`
	ID             string         `json:"id"`
	Messages       int            `json:"messages"`
	Depth          int            `json:"depth"`
	Consolidations map[string]int `json:"consolidations"`
	UpdatedAt      string         `json:"updated_at"`
	Fork           *forkJSON      `json:"fork,omitempty"`
	// Title, Kind, Group and Parent: the session's first user line and its place in its client
	// conversation.
	Title  string `json:"title"`
	Kind   string `json:"kind,omitempty"`
	Group  string `json:"group"`
	Parent string `json:"parent,omitempty"`
}

// The client conversation of billing-fix, as Claude Code names it, and its title.
const (
	billingGroup = "7f3e2a10-5c4b-4d8e-9a61-0b2c3d4e5f60"
	billingTitle = "Some invoices are off by one cent compared with the sum the customer sees in…"
)

// forkJSON is hippocam.Fork: the session a fork diverged from, after how many transcript messages.
type forkJSON struct {
	From string `json:"from"`
	At   int    `json:"at"`
}

// fixtureFiles names the fixture of each session that has a detail. A file name may not end a
// path element in "~" and digits (Go module zips reject what looks like a Windows short name).
var fixtureFiles = map[string]string{
	"billing-fix":   "session-billing-fix.json",
	"billing-fix~2": "session-billing-fix_fork2.json",
	"scratch":       "session-scratch.json",
}

func newFakeAPI(t *testing.T, key string) *fakeAPI {
	return &fakeAPI{t: t, key: key, now: time.Now().UTC(), deleted: map[string]bool{}}
}

// Handler returns the viewer and the API on one mux, as httpapi mounts them.
func (f *fakeAPI) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/sessions", f.listSessions)
	mux.HandleFunc("GET /api/sessions/{id}", f.getSession)
	mux.HandleFunc("GET /api/sessions/{id}/nodes/{ref}", f.getNode)
	mux.HandleFunc("GET /api/sessions/{id}/expand", f.expand)
	mux.HandleFunc("DELETE /api/sessions/{id}", f.deleteSession)
	mux.HandleFunc("GET /api/sessions/{id}/recording", f.getRecording)
	mux.Handle("GET /", viewer.Handler())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") {
			f.mu.Lock()
			f.requests = append(f.requests, apiRequest{r.Method, r.URL.EscapedPath(), r.Header.Get("Authorization")})
			f.mu.Unlock()
			if f.key != "" && r.Header.Get("Authorization") != "Bearer "+f.key {
				writeError(w, http.StatusUnauthorized, "unauthorized", "a valid API key is required: send Authorization: Bearer KEY")
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// Requests returns the API requests so far.
func (f *fakeAPI) Requests() []apiRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiRequest(nil), f.requests...)
}

// Count returns how many API requests had this method and path.
func (f *fakeAPI) Count(method, path string) int {
	n := 0
	for _, r := range f.Requests() {
		if r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}

// Bump makes the session "billing-fix" look changed: a new version and update time.
func (f *fakeAPI) Bump() {
	f.mu.Lock()
	f.bumps++
	f.mu.Unlock()
}

func (f *fakeAPI) state() (bumps int, deleted map[string]bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := map[string]bool{}
	for k, v := range f.deleted {
		d[k] = v
	}
	return f.bumps, d
}

func (f *fakeAPI) listSessions(w http.ResponseWriter, r *http.Request) {
	bumps, deleted := f.state()
	all := []sessionSummary{
		{Tenant: "default", ID: "billing-fix", Messages: 11, Depth: 3, Consolidations: map[string]int{"intent": 3, "prefix": 1},
			UpdatedAt: f.stamp(time.Minute - time.Duration(bumps)*time.Second), Title: billingTitle, Group: billingGroup},
		{Tenant: "default", ID: "scratch", Messages: 2, Depth: 0, Consolidations: map[string]int{"intent": 0, "prefix": 0},
			UpdatedAt: f.stamp(2 * time.Hour), Title: `<b>not bold</b><img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>`, Group: "scratch"},
		{Tenant: "default", ID: "billing-fix~2", Messages: 8, Depth: 1, Consolidations: map[string]int{"intent": 0, "prefix": 1},
			UpdatedAt: f.stamp(5 * time.Minute), Fork: &forkJSON{From: "billing-fix", At: 2}, Group: billingGroup,
			Title: "My notes on the start, consolidated: the user reported invoices one cent off the…"},
	}
	if f.conversation {
		none := map[string]int{"intent": 0, "prefix": 0}
		all = append(all,
			sessionSummary{Tenant: "default", ID: "auto-3f2a9c1b7e4d", Messages: 2, Consolidations: none, UpdatedAt: f.stamp(41 * time.Minute),
				Title: billingTitle, Kind: "title", Group: billingGroup, Parent: "billing-fix"},
			sessionSummary{Tenant: "default", ID: "auto-9b1e0c4d2a77", Messages: 6, Consolidations: none, UpdatedAt: f.stamp(3 * time.Minute),
				Title: "Find where Invoice.Total rounds each line", Kind: "subagent", Group: billingGroup, Parent: "billing-fix"})
	}
	all = append(all, f.extra...)
	list := []sessionSummary{}
	for _, s := range all {
		if !deleted[s.ID] {
			list = append(list, s)
		}
	}
	writeJSON(w, map[string]any{"sessions": list})
}

func (f *fakeAPI) getSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, ok := f.session(id)
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no session "+strconv.Quote(id))
		return
	}
	var s map[string]json.RawMessage
	if err := json.Unmarshal(body, &s); err != nil {
		f.t.Errorf("fixture of %s: %v", id, err)
		writeError(w, http.StatusInternalServerError, "internal", "bad fixture")
		return
	}
	if bumps, _ := f.state(); id == "billing-fix" && bumps > 0 {
		s["version"] = json.RawMessage(strconv.Itoa(17 + bumps))
		s["updated_at"] = json.RawMessage(strconv.Quote(f.stamp(time.Minute - time.Duration(bumps)*time.Second)))
	}
	if id == "billing-fix" && f.recording != "" {
		s["recording"] = json.RawMessage(fmt.Sprintf(`{"url":"/api/sessions/billing-fix/recording","bytes":%d}`, len(f.recording)))
	}
	writeJSON(w, s)
}

func (f *fakeAPI) getRecording(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("id") != "billing-fix" || f.recording == "" {
		writeError(w, http.StatusNotFound, "not_found", "no recording")
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="hippocam-billing-fix.jsonl"`)
	w.Write([]byte(f.recording))
}

var refPattern = regexp.MustCompile(`^r[0-9]+$`)

func (f *fakeAPI) getNode(w http.ResponseWriter, r *http.Request) {
	id, ref := r.PathValue("id"), r.PathValue("ref")
	if _, ok := f.session(id); !ok || !refPattern.MatchString(ref) {
		writeError(w, http.StatusNotFound, "not_found", "no node "+strconv.Quote(ref))
		return
	}
	body, err := os.ReadFile(filepath.Join("testdata", "node-"+ref+".json"))
	if err != nil {
		writeError(w, http.StatusNotFound, "not_found", "no node "+strconv.Quote(ref))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

func (f *fakeAPI) expand(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, ok := f.session(id); !ok {
		writeError(w, http.StatusNotFound, "not_found", "no session "+strconv.Quote(id))
		return
	}
	msgs, err := expandFixture(id)
	if err != nil {
		f.t.Errorf("expand %s: %v", id, err)
		writeError(w, http.StatusInternalServerError, "internal", "bad fixture")
		return
	}
	writeJSON(w, map[string]any{"messages": msgs})
}

func (f *fakeAPI) deleteSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, ok := f.session(id); !ok {
		writeError(w, http.StatusNotFound, "not_found", "no session "+strconv.Quote(id))
		return
	}
	f.mu.Lock()
	f.deleted[id] = true
	f.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// session returns the fixture of session id with its times filled in, unless it is deleted.
func (f *fakeAPI) session(id string) ([]byte, bool) {
	file, ok := fixtureFiles[id]
	if _, deleted := f.state(); deleted[id] || !ok {
		return nil, false
	}
	body, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		f.t.Errorf("fixture: %v", err)
		return nil, false
	}
	return nowPattern.ReplaceAllFunc(body, func(m []byte) []byte {
		sub := nowPattern.FindSubmatch(m)
		n, _ := strconv.Atoi(string(sub[1]))
		unit := time.Minute
		if string(sub[2]) == "H" {
			unit = time.Hour
		}
		return []byte(f.stamp(time.Duration(n) * unit))
	}), true
}

// nowPattern marks a time in a fixture: @NOW-5M@ is five minutes before the fake API started.
var nowPattern = regexp.MustCompile(`@NOW-([0-9]+)([MH])@`)

func (f *fakeAPI) stamp(ago time.Duration) string {
	return f.now.Add(-ago).Format(time.RFC3339)
}

// expandFixture returns the original transcript of a fixture session as httpapi's expansion
// gives it: its context with every consolidated message replaced by its node's children,
// recursively; the messages of a framing version carry "framing": its number (1, 2… in order),
// a regenerated answer "regenerated": true, and a mark with no node is left out.
func expandFixture(id string) ([]json.RawMessage, error) {
	body, err := os.ReadFile(filepath.Join("testdata", fixtureFiles[id]))
	if err != nil {
		return nil, err
	}
	var s struct {
		Context []json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(body, &s); err != nil {
		return nil, err
	}
	e := expander{}
	return e.expand(s.Context, 0, 0, false)
}

type expander struct {
	versions int // framing versions met so far
}

func (e *expander) expand(msgs []json.RawMessage, depth, framing int, regenerated bool) ([]json.RawMessage, error) {
	if depth > 10 {
		return nil, fmt.Errorf("the fixture tree is deeper than 10")
	}
	var out []json.RawMessage
	for _, raw := range msgs {
		var m struct {
			Ref  string `json:"ref"`
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		if m.Ref == "" {
			if m.Kind == "framing" || m.Kind == "branch" {
				continue // an empty framing: nothing beneath it
			}
			if framing > 0 || regenerated {
				var fields map[string]json.RawMessage
				if err := json.Unmarshal(raw, &fields); err != nil {
					return nil, err
				}
				if framing > 0 {
					fields["framing"] = json.RawMessage(strconv.Itoa(framing))
				}
				if regenerated {
					fields["regenerated"] = json.RawMessage("true")
				}
				b, err := json.Marshal(fields)
				if err != nil {
					return nil, err
				}
				raw = b
			}
			out = append(out, raw)
			continue
		}
		body, err := os.ReadFile(filepath.Join("testdata", "node-"+m.Ref+".json"))
		if err != nil {
			return nil, err
		}
		var node struct {
			Children []json.RawMessage `json:"children"`
		}
		if err := json.Unmarshal(body, &node); err != nil {
			return nil, fmt.Errorf("node %s: %w", m.Ref, err)
		}
		f, g := framing, regenerated
		switch m.Kind {
		case "framing":
			e.versions++
			f = e.versions
		case "branch":
			g = true
		}
		kids, err := e.expand(node.Children, depth+1, f, g)
		if err != nil {
			return nil, err
		}
		out = append(out, kids...)
	}
	return out, nil
}

// manySessions returns n sessions to list beside the fixture: roots "agent-000"…, updated a
// minute apart (the lowest number most recently); every tenth root has forks NAME~2…NAME~k
// (k = 2 + its tenth, so that some have many), the last of which forks the one before it; and
// "orphan~2" is a fork whose origin is not listed.
func (f *fakeAPI) manySessions(n int) []sessionSummary {
	var out []sessionSummary
	cons := map[string]int{"intent": 1, "prefix": 0}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("agent-%03d", i)
		out = append(out, sessionSummary{Tenant: "default", ID: id, Messages: 10 + i, Depth: i % 4, Consolidations: cons,
			UpdatedAt: f.stamp(time.Duration(10+i) * time.Minute)})
		if i%10 != 0 {
			continue
		}
		for k := 2; k <= 2+i/10; k++ {
			from := id
			if k > 2 && k == 2+i/10 {
				from = fmt.Sprintf("%s~%d", id, k-1)
			}
			out = append(out, sessionSummary{Tenant: "default", ID: fmt.Sprintf("%s~%d", id, k), Messages: 12, Depth: 1,
				Consolidations: cons, UpdatedAt: f.stamp(time.Duration(10+i)*time.Minute + time.Duration(k)*time.Second),
				Fork: &forkJSON{From: from, At: 3 + k}})
		}
	}
	out = append(out, sessionSummary{Tenant: "default", ID: "orphan~2", Messages: 4, Depth: 0, Consolidations: cons,
		UpdatedAt: f.stamp(3 * time.Minute), Fork: &forkJSON{From: "orphan", At: 1}})
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{
		"message": msg, "type": "invalid_request_error", "code": code,
	}})
}
