package httpapi

import (
	"net/http"

	"github.com/hippocam/hippocam"
)

// GET /api/jobs lists the request's tenant's queued jobs (hippocam.JobInfo), oldest first: the
// consolidations and learning updates still to run, how often each ran and why its last run
// failed. A job that failed every retry stays queued with its error, so this is where an operator
// (and the viewer's jobs page) sees it.

// listJobs is GET /api/jobs: {"jobs": [...]}, an empty list when the tenant has none.
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request, tenant string) {
	jobs, err := s.cfg.Store.Jobs(r.Context(), tenant)
	if err != nil {
		s.restError(w, r, err)
		return
	}
	if jobs == nil {
		jobs = []hippocam.JobInfo{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": jobs})
}
