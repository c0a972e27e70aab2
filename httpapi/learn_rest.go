package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/memory/library"
	"github.com/hippocam/hippocam/sessions"
)

// The REST API of the learning layer (docs/learning.md, "REST"): a tenant's clusters with their
// rendered state, and the lessons its lessons clusters keep, as JSON and as the Markdown lessons
// file. Every rule is the session service's (sessions/learning_service.go); these handlers read
// the request, call it and write its answer. Everything is looked up by (tenant, id), so another
// tenant's cluster and a cluster that does not exist give the same 404.

// clusterJSON is one cluster in GET /api/clusters.
type clusterJSON struct {
	ID           string    `json:"id"`
	System       string    `json:"system"`
	Description  string    `json:"description"`
	Trajectories int       `json:"trajectories"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

func clusterOf(c *hippocam.Cluster) clusterJSON {
	return clusterJSON{ID: c.ID, System: c.System, Description: c.Description, Trajectories: c.Trajectories,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

// clusterDetailJSON is GET /api/clusters/{id}: the cluster, the trajectories it applied, how many
// entries its state holds (as its system counts them) and the state rendered by its system.
type clusterDetailJSON struct {
	clusterJSON
	Version int64    `json:"version"`
	Entries int      `json:"entries"`
	Applied []string `json:"applied"`
	State   any      `json:"state"`
}

// listClusters is GET /api/clusters: the tenant's clusters, oldest first.
func (s *Server) listClusters(w http.ResponseWriter, r *http.Request, tenant string) {
	list, err := s.cfg.Sessions.Clusters(r.Context(), tenant)
	if err != nil {
		s.restError(w, r, err)
		return
	}
	out := make([]clusterJSON, len(list))
	for i := range list {
		out[i] = clusterOf(&list[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"clusters": out})
}

// getCluster is GET /api/clusters/{id}.
func (s *Server) getCluster(w http.ResponseWriter, r *http.Request, tenant string) {
	c, err := s.cfg.Sessions.Cluster(r.Context(), tenant, r.PathValue("id"))
	if err != nil {
		s.restError(w, r, err)
		return
	}
	state, entries, err := library.View(c.System, c.State) // a system this server does not know: shown as stored
	if err != nil {
		s.restError(w, r, fmt.Errorf("render cluster %s: %w", c.ID, err))
		return
	}
	writeJSON(w, http.StatusOK, clusterDetailJSON{clusterJSON: clusterOf(c), Version: c.Version, Entries: entries,
		Applied: append([]string{}, c.Applied...), State: state})
}

// deleteCluster is DELETE /api/clusters/{id}: 204, or 404 if the tenant has no such cluster.
func (s *Server) deleteCluster(w http.ResponseWriter, r *http.Request, tenant string) {
	if err := s.cfg.Sessions.DeleteCluster(r.Context(), tenant, r.PathValue("id")); err != nil {
		s.restError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listLessons is GET /api/lessons: every lesson of the tenant's lessons clusters (or of the one
// ?cluster= names), in force or not, cluster by cluster, oldest cluster first. ?status=active or
// ?status=superseded keeps only those.
func (s *Server) listLessons(w http.ResponseWriter, r *http.Request, tenant string) {
	q := r.URL.Query()
	out, err := s.cfg.Sessions.Lessons(r.Context(), tenant, sessions.LessonFilter{Cluster: q.Get("cluster"), Status: library.LessonStatus(q.Get("status"))})
	if err != nil {
		s.restError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"lessons": out})
}

// exportLessons is GET /api/lessons/export: the lessons file (text/markdown) of the cluster
// ?cluster= names, or of the tenant's lessons clusters (sessions.Service.LessonsFile).
func (s *Server) exportLessons(w http.ResponseWriter, r *http.Request, tenant string) {
	md, name, err := s.cfg.Sessions.LessonsFile(r.Context(), tenant, r.URL.Query().Get("cluster"))
	if err != nil {
		s.restError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	w.WriteHeader(http.StatusOK)
	w.Write(md)
}

// importResponse is the body of POST /api/lessons/import.
type importResponse struct {
	Cluster string `json:"cluster"`
	// Lessons counts every lesson the cluster keeps after the import, Active those in force.
	Lessons int `json:"lessons"`
	Active  int `json:"active"`
	// Changed is false when the file matched the cluster's lessons (the cluster was not written).
	Changed bool `json:"changed"`
	// DryRun is true when nothing was written because the request asked only what would change.
	DryRun bool `json:"dry_run"`
	// The lessons by what the import did to them; every lesson the cluster keeps after it is in
	// one of them.
	Added     lessonIDs `json:"added"`
	Edited    lessonIDs `json:"edited"`
	Withdrawn lessonIDs `json:"withdrawn"`
	Unchanged lessonIDs `json:"unchanged"`
}

// lessonIDs is a list of lessons in an import's answer: how many, and which.
type lessonIDs struct {
	Count int      `json:"count"`
	IDs   []string `json:"ids"`
}

func idsOf(ids []string) lessonIDs {
	return lessonIDs{Count: len(ids), IDs: append([]string{}, ids...)}
}

// importLessons is POST /api/lessons/import: the body, a lessons file, is imported into the
// lessons cluster ?cluster= names (which may be left out when the tenant has only one).
// ?dry_run=1 answers what the import would change and changes nothing; ?replace=all lets a file
// with no lesson entry withdraw every lesson, which is otherwise refused (a 400 that changes
// nothing). 200 with the counts; 400 naming the line for a file that cannot be read.
func (s *Server) importLessons(w http.ResponseWriter, r *http.Request, tenant string) {
	q := r.URL.Query()
	in := sessions.LessonsImport{Cluster: q.Get("cluster")}
	switch q.Get("replace") {
	case "":
	case "all":
		in.ReplaceAll = true
	default:
		writeError(w, hippocam.Errorf(hippocam.EINVALID, "replace is \"all\" (let the file withdraw every lesson it leaves out, even all of them) or absent"))
		return
	}
	if d := q.Get("dry_run"); d != "" {
		v, err := strconv.ParseBool(d)
		if err != nil {
			writeError(w, hippocam.Errorf(hippocam.EINVALID, "dry_run is 1 or 0 (true or false), not %q", d))
			return
		}
		in.DryRun = v
	}
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	in.File = body
	res, err := s.cfg.Sessions.ImportLessons(r.Context(), tenant, in)
	if err != nil {
		s.restError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, importResponse{Cluster: res.Cluster, Lessons: res.Lessons, Active: res.Active, Changed: res.Changed,
		DryRun: res.DryRun, Added: idsOf(res.Added), Edited: idsOf(res.Edited), Withdrawn: idsOf(res.Withdrawn), Unchanged: idsOf(res.Unchanged)})
}

// deleteLesson is DELETE /api/lessons/{id}: the lesson is withdrawn by its user
// (sessions.Service.WithdrawLesson). ?cluster= names its cluster when several of the tenant's
// lessons clusters have a lesson with that id. 204; 404 if none.
func (s *Server) deleteLesson(w http.ResponseWriter, r *http.Request, tenant string) {
	if err := s.cfg.Sessions.WithdrawLesson(r.Context(), tenant, r.URL.Query().Get("cluster"), r.PathValue("id")); err != nil {
		s.restError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// restError writes err in the REST API's error JSON, logging Hippocam's own failures (whose
// details the client does not see).
func (s *Server) restError(w http.ResponseWriter, r *http.Request, err error) {
	if hippocam.ErrorCode(err) == hippocam.EINTERNAL {
		s.log.Error("request failed", "path", r.URL.Path, "error", err)
	}
	writeError(w, err)
}
