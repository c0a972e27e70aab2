package httpapi

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"

	"github.com/hippocam/hippocam"
)

// Recordings finds the recording of a session's exchanges with the upstream (package record,
// `hippocam serve --record`).
type Recordings interface {
	// Path is the file of the session's lines; it need not exist.
	Path(tenant, session string) string
}

// recordingJSON is where a session's recording is, in GET /api/sessions/{id}: present only when
// recording is on and the session has one.
type recordingJSON struct {
	URL   string `json:"url"`
	Bytes int64  `json:"bytes"`
}

// recordingOf returns the recording of a session, nil when it has none.
func (s *Server) recordingOf(tenant, id string) *recordingJSON {
	if s.cfg.Recordings == nil {
		return nil
	}
	fi, err := os.Stat(s.cfg.Recordings.Path(tenant, id))
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	return &recordingJSON{URL: "/api/sessions/" + url.PathEscape(id) + "/recording", Bytes: fi.Size()}
}

// getRecording is GET /api/sessions/{id}/recording: the session's recorded exchanges with the
// upstream, one JSON object per line (application/x-ndjson), as far as they are written. 404
// when recording is off, the tenant has no such session, or the session has no recording.
func (s *Server) getRecording(w http.ResponseWriter, r *http.Request, tenant string) {
	id := r.PathValue("id")
	if s.cfg.Recordings == nil {
		writeError(w, hippocam.Errorf(hippocam.ENOTFOUND, "recording is off: hippocam serve --record DIR keeps the exchanges with the upstream"))
		return
	}
	if _, err := s.cfg.Store.Session(r.Context(), tenant, id); err != nil {
		writeError(w, err)
		return
	}
	f, err := os.Open(s.cfg.Recordings.Path(tenant, id))
	if errors.Is(err, os.ErrNotExist) {
		writeError(w, hippocam.Errorf(hippocam.ENOTFOUND, "session %q has no recording", id))
		return
	}
	if err != nil {
		writeError(w, hippocam.Errorf(hippocam.EUNAVAILABLE, "the recording cannot be read: %v", err))
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		writeError(w, hippocam.Errorf(hippocam.EUNAVAILABLE, "the recording cannot be read: %v", err))
		return
	}
	// What was written when the request came: lines appended meanwhile wait for the next one.
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="`+recordingFileName(id)+`"`)
	w.Header().Set("Cache-Control", "no-store")
	io.Copy(w, io.LimitReader(f, fi.Size()))
}

// recordingFileName is the name a downloaded recording is offered under: the session id with
// every byte but letters, digits, '-', '_' and '.' replaced by '_'.
func recordingFileName(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	return "hippocam-" + string(b) + ".jsonl"
}
