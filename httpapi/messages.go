package httpapi

import (
	"net/http"

	"github.com/hippocam/hippocam"
)

// messages is POST /v1/messages (Anthropic Messages).
func (s *Server) messages(w http.ResponseWriter, r *http.Request, tenant string) {
	s.fail(w, r, hippocam.FormatAnthropic, hippocam.Errorf(hippocam.ENOTFOUND, "not served yet"))
}

// writeAnthropicError writes err as Anthropic's error JSON.
func writeAnthropicError(w http.ResponseWriter, err error) { writeError(w, err) }
