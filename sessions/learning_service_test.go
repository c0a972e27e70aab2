package sessions_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/memory/lessons"
	"github.com/hippocam/hippocam/sessions"
)

// lessonsCluster creates a lessons cluster of the tenant holding the lessons of md.
func lessonsCluster(t *testing.T, st hippocam.Store, tenant, id, md string) {
	t.Helper()
	state, err := lessons.Import(nil, []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateCluster(context.Background(), &hippocam.Cluster{Tenant: tenant, ID: id, System: lessons.Name, Description: "scope of " + id, State: state}); err != nil {
		t.Fatal(err)
	}
}

const threeLessons = "# Lessons\n\n## use a = b\n- decision: d1\n\n## use c = d\n- decision: d2\n\n## avoid e = f\n- decision: d3\n"

// clusterChanges counts the ClusterChanged changes the service tells its observers.
func clusterChanges(svc *sessions.Service) func() int {
	var mu sync.Mutex
	n := 0
	svc.ObserveChanges(func(c sessions.Change) {
		if c.Kind == sessions.ClusterChanged {
			mu.Lock()
			n++
			mu.Unlock()
		}
	})
	return func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// An import of a body that parses but holds no lesson entry is refused and changes nothing,
// unless it asks to replace everything; a dry run says what an import would change and changes
// nothing; a real import says what it changed and tells the observers.
func TestLessonsImportRules(t *testing.T) {
	ctx := context.Background()
	svc, st := newService(t, 8000)
	lessonsCluster(t, st, "acme", "c1", threeLessons)
	changes := clusterChanges(svc)
	version := func() int64 {
		c, err := st.Cluster(ctx, "acme", "c1")
		if err != nil {
			t.Fatal(err)
		}
		return c.Version
	}
	v0 := version()

	random := make([]byte, 3000)
	for i := range random {
		random[i] = byte(i*7919 + i/3)
	}
	for name, body := range map[string][]byte{
		"Empty":        nil,
		"Blank":        []byte(" \n\t\n"),
		"Text":         []byte("hello world"),
		"Random":       random,
		"HTML":         []byte("<!doctype html><html><head><title>502</title></head><body><h1>Bad Gateway</h1></body></html>\n"),
		"EmptyLessons": []byte("# Lessons\n"),
	} {
		for _, dry := range []bool{false, true} {
			_, err := svc.ImportLessons(ctx, "acme", sessions.LessonsImport{File: body, DryRun: dry})
			if hippocam.ErrorCode(err) != hippocam.EINVALID || !strings.Contains(err.Error(), "no lesson entry") {
				t.Fatalf("%s (dry run %v): %v, want EINVALID saying it holds no lesson entry", name, dry, err)
			}
		}
	}
	if version() != v0 || changes() != 0 {
		t.Fatalf("refused imports changed the cluster: version %d → %d, %d changes told", v0, version(), changes())
	}

	md, _, err := svc.LessonsFile(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(md), "- decision: d2\n", "- decision: d2, rewritten\n", 1)
	edited = edited[:strings.Index(edited, "\n## L3:")] + "\n## use x = y\n- decision: new\n"
	dry, err := svc.ImportLessons(ctx, "acme", sessions.LessonsImport{File: []byte(edited), DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := &sessions.LessonsImported{Cluster: "c1", DryRun: true, Changed: true, Added: []string{"L4"}, Edited: []string{"L2"},
		Withdrawn: []string{"L3"}, Unchanged: []string{"L1"}, Lessons: 4, Active: 3}
	if !sameImport(dry, want) {
		t.Fatalf("dry run: %+v, want %+v", dry, want)
	}
	if version() != v0 || changes() != 0 {
		t.Fatal("a dry run changed the cluster")
	}

	done, err := svc.ImportLessons(ctx, "acme", sessions.LessonsImport{File: []byte(edited)})
	want.DryRun = false
	if err != nil || !sameImport(done, want) || version() == v0 || changes() != 1 {
		t.Fatalf("import: %+v, %v; %d changes told", done, err, changes())
	}
	md, _, err = svc.LessonsFile(ctx, "acme", "c1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := svc.ImportLessons(ctx, "acme", sessions.LessonsImport{File: md})
	if err != nil || again.Changed || len(again.Unchanged) != 4 || changes() != 1 {
		t.Fatalf("importing the same file again: %+v, %v", again, err)
	}

	all, err := svc.ImportLessons(ctx, "acme", sessions.LessonsImport{ReplaceAll: true})
	if err != nil || !all.Changed || all.Active != 0 || !slices.Equal(all.Withdrawn, []string{"L1", "L2", "L4"}) {
		t.Fatalf("an empty file with ReplaceAll: %+v, %v", all, err)
	}
	if active, err := svc.Lessons(ctx, "acme", sessions.LessonFilter{Status: lessons.Active}); err != nil || len(active) != 0 {
		t.Fatalf("lessons in force after replacing them all with nothing: %v, %v", active, err)
	}
}

func sameImport(a, b *sessions.LessonsImported) bool {
	return a.Cluster == b.Cluster && a.DryRun == b.DryRun && a.Changed == b.Changed && slices.Equal(a.Added, b.Added) &&
		slices.Equal(a.Edited, b.Edited) && slices.Equal(a.Withdrawn, b.Withdrawn) && slices.Equal(a.Unchanged, b.Unchanged) &&
		a.Lessons == b.Lessons && a.Active == b.Active
}

// Which cluster a request means, and its errors, are the service's: none is ENOTFOUND, several
// unnamed an EINVALID naming them, a cluster of another system EINVALID, another tenant's the
// same ENOTFOUND as one that exists nowhere.
func TestLessonsWhichCluster(t *testing.T) {
	ctx := context.Background()
	svc, st := newService(t, 8000)
	if _, err := svc.ImportLessons(ctx, "acme", sessions.LessonsImport{File: []byte(threeLessons)}); hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
		t.Fatalf("import with no lessons cluster: %v", err)
	}
	lessonsCluster(t, st, "acme", "c1", threeLessons)
	lessonsCluster(t, st, "acme", "c2", threeLessons)
	lessonsCluster(t, st, "other", "c9", threeLessons)
	if err := st.CreateCluster(ctx, &hippocam.Cluster{Tenant: "acme", ID: "i1", System: "icl"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ImportLessons(ctx, "acme", sessions.LessonsImport{File: []byte(threeLessons)}); hippocam.ErrorCode(err) != hippocam.EINVALID || !strings.Contains(err.Error(), "c1, c2") {
		t.Fatalf("import naming no cluster, with two: %v", err)
	}
	if _, err := svc.ImportLessons(ctx, "acme", sessions.LessonsImport{Cluster: "i1", File: []byte(threeLessons)}); hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Fatalf("import into an icl cluster: %v", err)
	}
	_, errOther := svc.Lessons(ctx, "acme", sessions.LessonFilter{Cluster: "c9"})
	_, errNone := svc.Lessons(ctx, "acme", sessions.LessonFilter{Cluster: "nowhere"})
	if hippocam.ErrorCode(errOther) != hippocam.ENOTFOUND || strings.Replace(errOther.Error(), "c9", "nowhere", 1) != errNone.Error() {
		t.Fatalf("another tenant's cluster: %v; one that exists nowhere: %v", errOther, errNone)
	}
	if _, err := svc.Lessons(ctx, "acme", sessions.LessonFilter{Status: "retired"}); hippocam.ErrorCode(err) != hippocam.EINVALID {
		t.Fatalf("a bad status: %v", err)
	}
	list, err := svc.Lessons(ctx, "acme", sessions.LessonFilter{})
	if err != nil || len(list) != 6 || list[0].Cluster != "c1" || list[5].Cluster != "c2" {
		t.Fatalf("every lesson of both clusters: %d, %v", len(list), err)
	}

	if err := svc.WithdrawLesson(ctx, "acme", "", "L1"); hippocam.ErrorCode(err) != hippocam.EINVALID || !strings.Contains(err.Error(), "c1, c2") {
		t.Fatalf("withdrawing an id two clusters have: %v", err)
	}
	if err := svc.WithdrawLesson(ctx, "acme", "", "L99"); hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
		t.Fatalf("withdrawing a lesson no cluster has: %v", err)
	}
	if err := svc.WithdrawLesson(ctx, "acme", "c2", "L1"); err != nil {
		t.Fatal(err)
	}
	superseded, err := svc.Lessons(ctx, "acme", sessions.LessonFilter{Status: lessons.Superseded})
	if err != nil || len(superseded) != 1 || superseded[0].Cluster != "c2" || superseded[0].Reason != lessons.DeletedByUser {
		t.Fatalf("after withdrawing c2's L1: %+v, %v", superseded, err)
	}

	if err := svc.DeleteCluster(ctx, "acme", "c9"); hippocam.ErrorCode(err) != hippocam.ENOTFOUND {
		t.Fatalf("deleting another tenant's cluster: %v", err)
	}
	if err := svc.DeleteCluster(ctx, "acme", "c1"); err != nil {
		t.Fatal(err)
	}
	if md, name, err := svc.LessonsFile(ctx, "acme", ""); err != nil || name != "lessons-c2.md" || !strings.HasPrefix(string(md), "# Lessons") {
		t.Fatalf("the file of the one lessons cluster left: %q, %v", name, err)
	}
}
