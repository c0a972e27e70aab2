package sessions

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/library"
)

// The learning layer as its users reach it (docs/learning.md, "REST"): a tenant's clusters, the
// lessons its lessons clusters keep, the lessons file out and in, a lesson withdrawn, and a
// task's outcome. The REST API (package httpapi), the MCP server (package mcp) and hippocam mcp
// call these methods and only translate; every rule (which cluster a request means, what an
// import may change, how an outcome's update is reported) is here. Errors carry the project's
// codes: ENOTFOUND for what the tenant does not have (another tenant's cluster gets the very
// same error), EINVALID for a request that cannot be served as it is.

// Clusters returns the tenant's clusters, oldest first.
func (s *Service) Clusters(ctx context.Context, tenant string) ([]hippocam.Cluster, error) {
	return s.cfg.Store.Clusters(ctx, tenant)
}

// Cluster returns the tenant's cluster id. ENOTFOUND if the tenant has none.
func (s *Service) Cluster(ctx context.Context, tenant, id string) (*hippocam.Cluster, error) {
	return s.cfg.Store.Cluster(ctx, tenant, id)
}

// DeleteCluster removes the tenant's cluster id and its state; a task pinned to its id later
// creates a fresh one. ENOTFOUND if the tenant has none.
func (s *Service) DeleteCluster(ctx context.Context, tenant, id string) error {
	if err := s.cfg.Store.DeleteCluster(ctx, tenant, id); err != nil {
		return err
	}
	s.changed(ClusterChanged, tenant, "", id)
	return nil
}

// Lesson is one lesson with the cluster that keeps it, as the lessons are listed.
type Lesson struct {
	Cluster string `json:"cluster"`
	library.LessonView
}

// LessonFilter narrows a listing of lessons: to one cluster (its id) and to one status. The
// zero filter keeps every lesson of every lessons cluster.
type LessonFilter struct {
	Cluster string
	Status  library.LessonStatus
}

// Lessons returns the lessons of the tenant's lessons clusters that f keeps, in force or not,
// cluster by cluster (oldest cluster first), each cluster's in the order they were made.
// EINVALID for a status that is neither active nor superseded, or a cluster of another system;
// ENOTFOUND for a cluster the tenant does not have.
func (s *Service) Lessons(ctx context.Context, tenant string, f LessonFilter) ([]Lesson, error) {
	if f.Status != "" && f.Status != library.LessonActive && f.Status != library.LessonSuperseded {
		return nil, hippocam.Errorf(hippocam.EINVALID, "status is %q or %q", library.LessonActive, library.LessonSuperseded)
	}
	clusters, err := s.lessonsClusters(ctx, tenant, f.Cluster)
	if err != nil {
		return nil, err
	}
	out := []Lesson{}
	for i := range clusters {
		v, err := library.ViewLessons(clusters[i].State)
		if err != nil {
			return nil, fmt.Errorf("render cluster %s: %w", clusters[i].ID, err)
		}
		for _, l := range v.Lessons {
			if f.Status == "" || l.Status == f.Status {
				out = append(out, Lesson{Cluster: clusters[i].ID, LessonView: l})
			}
		}
	}
	return out, nil
}

// LessonsFile is the lessons file (Markdown) of the tenant's lessons clusters, and the name to
// offer it under. With a cluster id, or when the tenant has one lessons cluster, it is that
// cluster's file exactly as lessons.Export writes it, which imports back unchanged (a file with no
// lesson in it only with ReplaceAll, as every file without an entry); with
// several, their files follow one another, each under a heading naming its cluster (a file to
// read and keep, imported again one cluster at a time); with none, an empty lessons file. Errors
// as for Lessons.
func (s *Service) LessonsFile(ctx context.Context, tenant, cluster string) (md []byte, name string, err error) {
	clusters, err := s.lessonsClusters(ctx, tenant, cluster)
	if err != nil {
		return nil, "", err
	}
	var b strings.Builder
	name = "lessons.md"
	switch len(clusters) {
	case 0:
		md, err := library.ExportLessons(nil)
		if err != nil {
			return nil, "", err
		}
		b.Write(md)
	case 1:
		md, err := library.ExportLessons(clusters[0].State)
		if err != nil {
			return nil, "", fmt.Errorf("export cluster %s: %w", clusters[0].ID, err)
		}
		b.Write(md)
		if plainName.MatchString(clusters[0].ID) {
			name = "lessons-" + clusters[0].ID + ".md"
		}
	default:
		for i, c := range clusters {
			md, err := library.ExportLessons(c.State)
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

// LessonsImport is a lessons file to import, and how.
type LessonsImport struct {
	// Cluster is the lessons cluster to import into; it may be left empty when the tenant has
	// only one.
	Cluster string
	// File is the lessons file (Markdown, as LessonsFile writes it).
	File []byte
	// ReplaceAll lets a file with no lesson entry withdraw every lesson in force. Without it
	// such a file (an empty body, plain text, an error page, the title alone) is refused.
	ReplaceAll bool
	// DryRun computes what the import would change and changes nothing.
	DryRun bool
}

// LessonsImported is what an import changed (or, for a dry run, would change): the cluster, the
// lessons by what happened to them, and the counts after it.
type LessonsImported struct {
	Cluster string
	DryRun  bool
	// Changed is false when the file matched the cluster's lessons: nothing was written.
	Changed bool
	// Added, Edited, Withdrawn and Unchanged are lesson ids; every lesson the cluster keeps
	// after the import is in exactly one of them (library.LessonsImportResult).
	Added, Edited, Withdrawn, Unchanged []string
	// Lessons counts every lesson the cluster keeps after the import, Active those in force.
	Lessons, Active int
}

// ImportLessons reads a lessons file into one lessons cluster of the tenant (lessons.ImportFile)
// and commits it at the version it was read at, reading and importing again after a concurrent
// update; a file that changes nothing writes nothing, and a dry run writes nothing at all.
// ENOTFOUND when the cluster named, or any lessons cluster, is not there; EINVALID when several
// could be meant and none is named, for a cluster of another system, for a file that cannot be
// read (naming the line), and for a file with no entry without ReplaceAll. On an error nothing
// changes.
func (s *Service) ImportLessons(ctx context.Context, tenant string, in LessonsImport) (*LessonsImported, error) {
	opts := library.LessonsImportOptions{ReplaceAll: in.ReplaceAll}
	// A file that is not a lessons file is refused as such, whatever clusters the tenant has.
	if _, err := library.ImportLessonsFile(nil, in.File, opts); err != nil {
		return nil, err
	}
	read, err := s.oneLessonsCluster(ctx, tenant, in.Cluster)
	if err != nil {
		return nil, err
	}
	id := read.ID
	var res *library.LessonsImportResult
	if in.DryRun {
		if res, err = library.ImportLessonsFile(read.State, in.File, opts); err != nil {
			return nil, err
		}
	} else {
		_, err = learn.Change(ctx, s.cfg.Store, tenant, id, func(c *hippocam.Cluster) (bool, error) {
			r, err := library.ImportLessonsFile(c.State, in.File, opts)
			if err != nil {
				return false, err
			}
			res = r // the result of the state the commit was made on
			if r.Changed {
				c.State = r.State
			}
			return r.Changed, nil
		})
		if err != nil {
			return nil, err
		}
		if res.Changed {
			s.changed(ClusterChanged, tenant, "", id)
		}
	}
	return &LessonsImported{Cluster: id, DryRun: in.DryRun, Changed: res.Changed, Added: res.Added, Edited: res.Edited,
		Withdrawn: res.Withdrawn, Unchanged: res.Unchanged, Lessons: res.Lessons, Active: res.Active}, nil
}

// WithdrawLesson withdraws a lesson by its user (lessons.Delete: superseded, replaced by
// nothing, reason "deleted by the user", kept with its history). The tenant's lessons clusters
// are searched for the id, or only the cluster named. Withdrawing a lesson no longer in force
// changes nothing. ENOTFOUND if no cluster has the lesson; EINVALID if several do and none is
// named.
func (s *Service) WithdrawLesson(ctx context.Context, tenant, cluster, lesson string) error {
	clusters, err := s.lessonsClusters(ctx, tenant, cluster)
	if err != nil {
		return err
	}
	var holding []string
	for i := range clusters {
		st, err := library.ParseLessons(clusters[i].State)
		if err != nil {
			return fmt.Errorf("read cluster %s: %w", clusters[i].ID, err)
		}
		if st.Lesson(lesson) != nil {
			holding = append(holding, clusters[i].ID)
		}
	}
	switch {
	case len(holding) == 0:
		return hippocam.Errorf(hippocam.ENOTFOUND, "no lesson %q", lesson)
	case len(holding) > 1:
		return hippocam.Errorf(hippocam.EINVALID, "lesson %q is in clusters %s: name one with ?cluster=ID", lesson, strings.Join(holding, ", "))
	}
	changed := false
	_, err = learn.Change(ctx, s.cfg.Store, tenant, holding[0], func(c *hippocam.Cluster) (bool, error) {
		next, ch, err := library.DeleteLesson(c.State, lesson)
		if err == nil && ch {
			c.State = next
		}
		changed = ch
		return ch, err
	})
	if err == nil && changed {
		s.changed(ClusterChanged, tenant, "", holding[0])
	}
	return err
}

// lessonsClusters returns the tenant's lessons clusters, oldest first, or only the one id names.
// ENOTFOUND if the tenant has no cluster id; EINVALID if it is not a lessons cluster.
func (s *Service) lessonsClusters(ctx context.Context, tenant, id string) ([]hippocam.Cluster, error) {
	if id != "" {
		c, err := s.cfg.Store.Cluster(ctx, tenant, id)
		if err != nil {
			return nil, err
		}
		if c.System != library.LessonsSystem {
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
		if c.System == library.LessonsSystem {
			out = append(out, c)
		}
	}
	return out, nil
}

// oneLessonsCluster is the lessons cluster a request means, as read: the one it names, or the
// tenant's only one. ENOTFOUND if there is none; EINVALID if there are several and none is named.
func (s *Service) oneLessonsCluster(ctx context.Context, tenant, id string) (*hippocam.Cluster, error) {
	clusters, err := s.lessonsClusters(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	switch len(clusters) {
	case 0:
		return nil, hippocam.Errorf(hippocam.ENOTFOUND, "there is no lessons cluster")
	case 1:
		return &clusters[0], nil
	}
	ids := make([]string, len(clusters))
	for i := range clusters {
		ids[i] = clusters[i].ID
	}
	return nil, hippocam.Errorf(hippocam.EINVALID, "there are several lessons clusters (%s): name one with ?cluster=ID", strings.Join(ids, ", "))
}

// What became of an outcome's cluster update (OutcomeReport.Update).
const (
	UpdateNone   = "none"   // the task was routed to no cluster: nothing learns from it
	UpdateQueued = "queued" // a job updates the cluster
	UpdateDone   = "done"   // the cluster learned from the task before the answer
)

// OutcomeReport is what a reported outcome did: the task ended, and its cluster's update.
type OutcomeReport struct {
	Session *hippocam.Session
	// Cluster is the cluster the task was routed to ("" when none, or while its routing is
	// pending: the update routes it).
	Cluster string
	// Update is UpdateNone, UpdateQueued or UpdateDone.
	Update string
	// UpdateErr is the failure of the update run at once (wait): the task has ended all the
	// same and the update's job retries it, so Update is UpdateQueued.
	UpdateErr error
}

// ReportOutcome ends a task with its outcome (EndTask) and says what became of its cluster's
// update: queued for a job, done before the answer (wait), or none when the task had no
// cluster. Errors as for EndTask, when the task did not end: EINVALID for a bad outcome
// (feedback missing or too long, attempts negative or above MaxAttempts), ENOTFOUND for a
// session the tenant does not have, ECONFLICT for a task that has ended already.
func (s *Service) ReportOutcome(ctx context.Context, tenant, id string, o Outcome, wait bool) (*OutcomeReport, error) {
	sess, err := s.EndTask(ctx, tenant, id, o, wait)
	if err != nil && sess == nil {
		return nil, err
	}
	rep := &OutcomeReport{Session: sess, Update: UpdateNone, UpdateErr: err}
	if l := sess.Transcript.Learning; l != nil && (l.Cluster != "" || l.Pending()) { // a pending task is routed by its update
		rep.Cluster, rep.Update = l.Cluster, UpdateQueued
		if wait && err == nil {
			rep.Update = UpdateDone
		}
	}
	return rep, nil
}
