// Package viewer is Hippocam's web viewer: one page that shows the sessions a server keeps, each
// session's context as the first layer of its message tree, the originals beneath every
// consolidated message (opened node by node), the intent stack and its history, the knowledge
// of prefix memories, the recall traces of answers, and usage and cost by role.
//
// The session list names each session by its title (its first user line), is searched by id or
// title and sorted by latest activity; a fork is listed beneath the session it forked from, with
// its divergence point (shown in both transcripts), and the other sessions of a client
// conversation (a title request, subagents, side requests) beneath the session they serve,
// marked. A session's context meter shows its last main request part by part (Hippocam's
// prompt, framing, tools, recall tools, memory, messages) against the window, with the input the
// provider reported beside it. A session shows the agent's current framing; framing marks (the framing changed: they open that
// version) and branch marks (an answer was regenerated: they open the earlier answer) stand in
// its tree; messages show their wire format, their exact raw JSON on demand, and a label for
// each non-text part.
//
// When the server learns (hippocam serve --learn), a session also shows its task's routing
// decision (cluster, memory system, decision and the router's reason), the advisory it read and,
// once ended, its outcome. Two more pages show what was learned: the clusters (system, scope,
// trajectories, latest update; one opened shows its state as its memory system keeps it, read
// from /api/clusters…) and the lessons (in force and superseded, with what replaced them and why,
// their conditions, evidence and provenance, and a button that downloads the Markdown lessons
// file from /api/lessons/export).
//
// The page is plain HTML, CSS and JavaScript embedded in the binary: no build step, nothing
// fetched from elsewhere. It reads the JSON REST API of package httpapi from the same origin
// (/api/sessions…), so the handler is meant to be mounted at "/" beside that API. When the API
// answers 401, the page asks for a key, keeps it in the browser's localStorage and sends it as
// Authorization: Bearer KEY on every call.
//
// Message text is untrusted: the page only ever sets it as text, never as markup, and the
// handler sends a Content-Security-Policy that allows only the page's own scripts and styles.
package viewer

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// contentSecurityPolicy confines the page to its own origin: its scripts and styles come from
// /assets/, its data from /api/, and nothing may frame it.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file, ready to serve.
type asset struct {
	body  []byte
	etag  string
	ctype string
}

// Handler returns the viewer's HTTP handler. It answers GET and HEAD for "/" (the page) and
// "/assets/NAME" (its scripts and style sheet), 404 for any other path and 405 for any other
// method. Responses carry an ETag and Cache-Control: no-cache, so a browser revalidates and
// picks up a new binary's assets at once.
func Handler() http.Handler {
	files := map[string]asset{}
	// The tree is embedded and fixed at build time; a walk error would be a build defect, and
	// the files it did read are still served.
	_ = fs.WalkDir(static, "static", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		body, err := static.ReadFile(name)
		if err != nil {
			return nil
		}
		sum := sha256.Sum256(body)
		ctype := mime.TypeByExtension(path.Ext(name))
		if ctype == "" {
			ctype = http.DetectContentType(body)
		}
		files[strings.TrimPrefix(name, "static")] = asset{
			body:  body,
			etag:  `"` + hex.EncodeToString(sum[:8]) + `"`,
			ctype: ctype,
		}
		return nil
	})
	return &handler{files: files}
}

type handler struct {
	files map[string]asset // by URL path: "/index.html", "/assets/app.js"…
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Path
	if name == "/" {
		name = "/index.html"
	}
	a, ok := h.files[name]
	if !ok || (name != "/index.html" && !strings.HasPrefix(name, "/assets/")) {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", a.ctype)
	hdr.Set("ETag", a.etag)
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	if name == "/index.html" {
		hdr.Set("Content-Security-Policy", contentSecurityPolicy)
		hdr.Set("X-Frame-Options", "DENY")
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
}
