package httpapi

import (
	"net/http"

	"github.com/hippocam/hippocam"
)

// responses is POST /v1/responses (OpenAI Responses).
func (s *Server) responses(w http.ResponseWriter, r *http.Request, tenant string) {
	s.fail(w, r, hippocam.FormatResponses, hippocam.Errorf(hippocam.ENOTFOUND, "not served yet"))
}
