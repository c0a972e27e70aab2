package sim

import "net/http"

// serveMessages is POST …/messages: Anthropic's Messages API (not served yet).
func (m *Model) serveMessages(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, "invalid_request_error", "the Messages API is not served yet")
}
