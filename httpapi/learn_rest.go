package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/lessons"
	"github.com/hippocam/hippocam/memory/library"
)

// The REST API of the learning layer (docs/learning.md, "REST"): a tenant's clusters with their
// rendered state, and the lessons its lessons clusters keep, as JSON and as the Markdown lessons
// file. Everything is looked up by (tenant, id) in the store, so another tenant's cluster and a
// cluster that does not exist give the same 404.

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

// lessonJSON is one lesson in GET /api/lessons, with the cluster that keeps it.
type lessonJSON struct {
	Cluster string `json:"cluster"`
	lessons.LessonView
}

// listClusters is GET /api/clusters: the tenant's clusters, oldest first.
func (s *Server) listClusters(w http.ResponseWriter, r *http.Request, tenant string) {
	list, err := s.cfg.Store.Clusters(r.Context(), tenant)
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
	c, err := s.cfg.Store.Cluster(r.Context(), tenant, r.PathValue("id"))
	if err != nil {
		s.restError(w, r, err)
		return
	}
	state, entries, err := stateView(c)
	if err != nil {
		s.restError(w, r, fmt.Errorf("render cluster %s: %w", c.ID, err))
		return
	}
	writeJSON(w, http.StatusOK, clusterDetailJSON{clusterJSON: clusterOf(c), Version: c.Version, Entries: entries,
		Applied: append([]string{}, c.Applied...), State: state})
}

// stateView renders a cluster's state through its system's view, and counts its entries as the
// system's Entries does. A state of a system this server does not know is shown as stored.
func stateView(c *hippocam.Cluster) (state any, entries int, err error) {
	return library.View(c.System, c.State)
}

// deleteCluster is DELETE /api/clusters/{id}: 204, or 404 if the tenant has no such cluster.
func (s *Server) deleteCluster(w http.ResponseWriter, r *http.Request, tenant string) {
	if err := s.cfg.Store.DeleteCluster(r.Context(), tenant, r.PathValue("id")); err != nil {
		s.restError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listLessons is GET /api/lessons: every lesson of the tenant's lessons clusters (or of the one
// ?cluster= names), in force or not, cluster by cluster, oldest cluster first. ?status=active or
// ?status=superseded keeps only those.
func (s *Server) listLessons(w http.ResponseWriter, r *http.Request, tenant string) {
	status := lessons.Status(r.URL.Query().Get("status"))
	if status != "" && status != lessons.Active && status != lessons.Superseded {
		writeError(w, hippocam.Errorf(hippocam.EINVALID, "status is %q or %q", lessons.Active, lessons.Superseded))
		return
	}
	clusters, err := s.lessonsClusters(r.Context(), tenant, r.URL.Query().Get("cluster"))
	if err != nil {
		s.restError(w, r, err)
		return
	}
	out := []lessonJSON{}
	for i := range clusters {
		v, err := lessons.View(clusters[i].State)
		if err != nil {
			s.restError(w, r, fmt.Errorf("render cluster %s: %w", clusters[i].ID, err))
			return
		}
		for _, l := range v.Lessons {
			if status == "" || l.Status == status {
				out = append(out, lessonJSON{Cluster: clusters[i].ID, LessonView: l})
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"lessons": out})
}

// exportLessons is GET /api/lessons/export: the lessons file (text/markdown). With ?cluster=ID,
// or when the tenant has one lessons cluster, it is that cluster's file, which imports back
// unchanged; with several, their files follow one another, each under a heading naming its
// cluster (a file to read and keep, imported again one cluster at a time).
func (s *Server) exportLessons(w http.ResponseWriter, r *http.Request, tenant string) {
	want := r.URL.Query().Get("cluster")
	clusters, err := s.lessonsClusters(r.Context(), tenant, want)
	if err != nil {
		s.restError(w, r, err)
		return
	}
	md, name, err := lessonsFile(clusters)
	if err != nil {
		s.restError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	w.WriteHeader(http.StatusOK)
	w.Write(md)
}

// lessonsFile is the lessons file of clusters and its file name, as exportLessons writes them:
// one cluster's file as it is (it imports back unchanged), several one after another under a
// heading naming each, none an empty file.
func lessonsFile(clusters []hippocam.Cluster) ([]byte, string, error) {
	var b strings.Builder
	name := "lessons.md"
	switch len(clusters) {
	case 0:
		md, err := lessons.Export(nil)
		if err != nil {
			return nil, "", err
		}
		b.Write(md)
	case 1:
		md, err := lessons.Export(clusters[0].State)
		if err != nil {
			return nil, "", fmt.Errorf("export cluster %s: %w", clusters[0].ID, err)
		}
		b.Write(md)
		if plainName.MatchString(clusters[0].ID) {
			name = "lessons-" + clusters[0].ID + ".md"
		}
	default:
		for i, c := range clusters {
			md, err := lessons.Export(c.State)
			if err != nil {
				return nil, "", fmt.Errorf("export cluster %s: %w", c.ID, err)
			}
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "# Cluster %s\n\nScope: %s\n\n", c.ID, oneLine(c.Description))
			b.Write(md)
		}
	}
	return []byte(b.String()), name, nil
}

// plainName is a cluster id that may go into a file name as it is.
var plainName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// importResponse is the body of POST /api/lessons/import.
type importResponse struct {
	Cluster string `json:"cluster"`
	// Lessons counts every lesson the cluster keeps after the import, Active those in force.
	Lessons int `json:"lessons"`
	Active  int `json:"active"`
	// Changed is false when the file matched the cluster's lessons (the cluster was not written).
	Changed bool `json:"changed"`
}

// importLessons is POST /api/lessons/import: the body, a lessons file, is read into the lessons
// cluster ?cluster= names (which may be left out when the tenant has only one) with
// lessons.Import, and committed at the version it was read at, read again after a concurrent
// update. 200 with the counts; 400 naming the line for a file that cannot be read; an empty
// body is refused, since it would withdraw every lesson.
func (s *Server) importLessons(w http.ResponseWriter, r *http.Request, tenant string) {
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	if strings.TrimSpace(string(body)) == "" {
		writeError(w, hippocam.Errorf(hippocam.EINVALID, "the body must be a lessons file (Markdown, as GET /api/lessons/export writes it)"))
		return
	}
	id, err := s.oneLessonsCluster(r.Context(), tenant, r.URL.Query().Get("cluster"))
	if err != nil {
		s.restError(w, r, err)
		return
	}
	var changed bool
	c, err := s.changeCluster(r.Context(), tenant, id, func(state json.RawMessage) (json.RawMessage, bool, error) {
		next, err := lessons.Import(state, body)
		if err != nil {
			return nil, false, err
		}
		before, err := lessons.ParseState(state)
		if err != nil {
			return nil, false, err
		}
		after, err := lessons.ParseState(next)
		if err != nil {
			return nil, false, err
		}
		changed = after.Updates != before.Updates // Import counts an update only when it changed something
		return next, changed, nil
	})
	if err != nil {
		s.restError(w, r, err)
		return
	}
	st, err := lessons.ParseState(c.State)
	if err != nil {
		s.restError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, importResponse{Cluster: id, Lessons: len(st.Lessons), Active: len(st.Active()), Changed: changed})
}

// deleteLesson is DELETE /api/lessons/{id}: the lesson is withdrawn by its user (lessons.Delete:
// superseded, reason "deleted by the user", kept with its history). ?cluster= names its cluster
// when several of the tenant's lessons clusters have a lesson with that id. 204; 404 if none.
func (s *Server) deleteLesson(w http.ResponseWriter, r *http.Request, tenant string) {
	lesson := r.PathValue("id")
	clusters, err := s.lessonsClusters(r.Context(), tenant, r.URL.Query().Get("cluster"))
	if err != nil {
		s.restError(w, r, err)
		return
	}
	var holding []string
	for i := range clusters {
		st, err := lessons.ParseState(clusters[i].State)
		if err != nil {
			s.restError(w, r, fmt.Errorf("read cluster %s: %w", clusters[i].ID, err))
			return
		}
		if st.Lesson(lesson) != nil {
			holding = append(holding, clusters[i].ID)
		}
	}
	switch {
	case len(holding) == 0:
		writeError(w, hippocam.Errorf(hippocam.ENOTFOUND, "no lesson %q", lesson))
		return
	case len(holding) > 1:
		writeError(w, hippocam.Errorf(hippocam.EINVALID, "lesson %q is in clusters %s: name one with ?cluster=ID", lesson, strings.Join(holding, ", ")))
		return
	}
	_, err = s.changeCluster(r.Context(), tenant, holding[0], func(state json.RawMessage) (json.RawMessage, bool, error) {
		return lessons.Delete(state, lesson)
	})
	if err != nil {
		s.restError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// lessonsClusters returns the tenant's lessons clusters, oldest first, or only the one id names.
// ENOTFOUND if the tenant has no cluster id; EINVALID if it is not a lessons cluster.
func (s *Server) lessonsClusters(ctx context.Context, tenant, id string) ([]hippocam.Cluster, error) {
	if id != "" {
		c, err := s.cfg.Store.Cluster(ctx, tenant, id)
		if err != nil {
			return nil, err
		}
		if c.System != lessons.Name {
			return nil, hippocam.Errorf(hippocam.EINVALID, "cluster %q keeps %s, not lessons", id, c.System)
		}
		return []hippocam.Cluster{*c}, nil
	}
	all, err := s.cfg.Store.Clusters(ctx, tenant)
	if err != nil {
		return nil, err
	}
	var out []hippocam.Cluster
	for _, c := range all {
		if c.System == lessons.Name {
			out = append(out, c)
		}
	}
	return out, nil
}

// oneLessonsCluster is the id of the lessons cluster a request means: the one it names, or the
// tenant's only one. ENOTFOUND if there is none; EINVALID if there are several and none is named.
func (s *Server) oneLessonsCluster(ctx context.Context, tenant, id string) (string, error) {
	clusters, err := s.lessonsClusters(ctx, tenant, id)
	if err != nil {
		return "", err
	}
	switch len(clusters) {
	case 0:
		return "", hippocam.Errorf(hippocam.ENOTFOUND, "there is no lessons cluster")
	case 1:
		return clusters[0].ID, nil
	}
	ids := make([]string, len(clusters))
	for i := range clusters {
		ids[i] = clusters[i].ID
	}
	return "", hippocam.Errorf(hippocam.EINVALID, "there are several lessons clusters (%s): name one with ?cluster=ID", strings.Join(ids, ", "))
}

// changeCluster applies change to the state of the tenant's cluster id through learn.Change
// (read, change, commit at the version read, again on a conflict). A change that reports nothing
// changed writes nothing. It returns the cluster as it now is.
func (s *Server) changeCluster(ctx context.Context, tenant, id string, change func(state json.RawMessage) (json.RawMessage, bool, error)) (*hippocam.Cluster, error) {
	return learn.Change(ctx, s.cfg.Store, tenant, id, func(c *hippocam.Cluster) (bool, error) {
		next, changed, err := change(c.State)
		if err == nil && changed {
			c.State = next
		}
		return changed, err
	})
}

// restError writes err in the REST API's error JSON, logging Hippocam's own failures (whose
// details the client does not see).
func (s *Server) restError(w http.ResponseWriter, r *http.Request, err error) {
	if hippocam.ErrorCode(err) == hippocam.EINTERNAL {
		s.log.Error("request failed", "path", r.URL.Path, "error", err)
	}
	writeError(w, err)
}
