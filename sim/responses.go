package sim

import "net/http"

// serveResponses is POST …/responses: OpenAI's Responses API (not served yet).
func (m *Model) serveResponses(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, "invalid_request_error", "the Responses API is not served yet")
}
