package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/sessions"
)

// The learning layer's headers (docs/learning.md): a request may opt out of learning, pin its
// task's cluster, or group attempts under a task key; the response names the cluster a task
// start was routed to.
const (
	LearnHeader   = "Hippocam-Learn"   // "off": this task neither reads nor feeds a cluster
	ClusterHeader = "Hippocam-Cluster" // request: pin a cluster by id or scope; response: the cluster used
	TaskHeader    = "Hippocam-Task"    // the task key shared by the attempts of one problem
)

// learnHeaders copies the learning headers of r into req.
func learnHeaders(r *http.Request, req *sessions.Request) {
	req.LearnOff = strings.EqualFold(strings.TrimSpace(r.Header.Get(LearnHeader)), "off")
	req.Cluster = strings.TrimSpace(r.Header.Get(ClusterHeader))
	req.TaskKey = strings.TrimSpace(r.Header.Get(TaskHeader))
}

// outcomeResponse is the body of POST /api/sessions/{id}/outcome.
type outcomeResponse struct {
	Session string `json:"session"`
	Ended   bool   `json:"ended"`
	Cluster string `json:"cluster,omitempty"`
	// Update is "queued" (a job updates the cluster), "done" (?wait=1), or "none" (the task
	// was not routed to a cluster).
	Update string `json:"update"`
}

// outcome is POST /api/sessions/{id}/outcome: the task's end (sessions.Service.ReportOutcome).
// 202 when the cluster update is queued, 200 when it ran (?wait=1) or there is none; 400 for a
// bad outcome (attempts above sessions.MaxAttempts among them); 409 for a task that has ended
// already.
func (s *Server) outcome(w http.ResponseWriter, r *http.Request, tenant string) {
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	var o sessions.Outcome
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		writeError(w, hippocam.Errorf(hippocam.EINVALID, "the outcome must be a JSON object with feedback (text), and optionally success, reward and attempts: %v", err))
		return
	}
	wait := r.URL.Query().Get("wait") == "1"
	rep, err := s.cfg.Sessions.ReportOutcome(r.Context(), tenant, r.PathValue("id"), o, wait)
	if err != nil {
		writeError(w, err)
		return
	}
	resp := outcomeResponse{Session: rep.Session.ID, Ended: true, Cluster: rep.Cluster, Update: rep.Update}
	status := http.StatusOK
	if rep.Update == sessions.UpdateQueued {
		status = http.StatusAccepted
	}
	if rep.UpdateErr != nil { // ended and queued, but the update run for ?wait=1 failed: the job retries it
		s.log.Warn("learning: the outcome's update failed; its job will retry", "session", rep.Session.ID, "error", rep.UpdateErr)
	}
	if m := s.cfg.Metrics; m != nil {
		update := resp.Update
		if rep.UpdateErr != nil {
			update = "failed"
		}
		m.outcomes.WithLabelValues(update).Inc()
	}
	writeJSON(w, status, resp)
}

// learnTask is POST /api/tasks/{key}/learn: the attempts of key that wait for the rest of their
// key (lessons) are learned from now.
func (s *Server) learnTask(w http.ResponseWriter, r *http.Request, tenant string) {
	n, err := s.cfg.Sessions.LearnTask(r.Context(), tenant, r.PathValue("key"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"task": r.PathValue("key"), "clusters": n})
}
