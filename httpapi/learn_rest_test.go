package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/hippocamsys"
	"github.com/hippocam/hippocam/memory/icl"
	"github.com/hippocam/hippocam/memory/lessons"
	"github.com/hippocam/hippocam/memory/memorytest"
	"github.com/hippocam/hippocam/memory/reasoningbank"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/hippocam/hippocam/tokenizer"
)

// learnREST is a server over a store whose clusters were made directly through the ClusterStore
// and learned through the systems' Update (learn.Apply) with the in-process simulated model.
type learnREST struct {
	*testServer
	env     *learn.Env
	systems map[string]hippocam.MemorySystem
}

// Keys of the two tenants: acme's key, and the other tenant's.
const (
	acmeKey  = "k-acme"
	otherKey = "k-other"
)

func newLearnREST(t *testing.T, store hippocam.Store) *learnREST {
	t.Helper()
	tok := tokenizer.MustDefault()
	model := sim.New(tok).InProcess()
	e, err := engine.New(engine.ForWindow(8000), model, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: store, Keys: map[string]string{acmeKey: "acme", otherKey: "other"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	env := &learn.Env{Model: model, Tok: tok}
	return &learnREST{testServer: &testServer{Server: ts, store: store}, env: env, systems: map[string]hippocam.MemorySystem{
		icl.Name: icl.New(env), reasoningbank.Name: reasoningbank.New(env), lessons.Name: lessons.New(env), hippocamsys.Name: hippocamsys.New(env),
	}}
}

// cluster creates a cluster of system for tenant and learns the trajectories lo…hi-1 of the
// memorytest stream into it.
func (s *learnREST) cluster(t *testing.T, tenant, id, system, scope string, lo, hi int) {
	t.Helper()
	ctx := context.Background()
	if err := s.store.CreateCluster(ctx, &hippocam.Cluster{Tenant: tenant, ID: id, System: system, Description: scope}); err != nil {
		t.Fatal(err)
	}
	var trajs []hippocam.Trajectory
	for i := lo; i < hi; i++ {
		trajs = append(trajs, memorytest.Trajectory(i))
	}
	if err := learn.Apply(ctx, s.store, s.systems[system], tenant, id, trajs); err != nil {
		t.Fatal(err)
	}
}

func (s *learnREST) stored(t *testing.T, tenant, id string) *hippocam.Cluster {
	t.Helper()
	c, err := s.store.Cluster(context.Background(), tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// acme's clusters: one per system (c1…c4), the lessons one learned from a stream whose first
// task in every family is a mistake, so that it holds lessons.
func (s *learnREST) acme(t *testing.T) {
	t.Helper()
	s.cluster(t, "acme", "c1", icl.Name, "acme sales reports", 0, 2)
	s.cluster(t, "acme", "c2", reasoningbank.Name, "acme refunds", 0, 1)
	s.cluster(t, "acme", "c3", lessons.Name, "acme operations", 3, 6)
	s.cluster(t, "acme", "c4", hippocamsys.Name, "acme labels", 0, 2)
}

// other's clusters: "c1" (the id of one of acme's, another system), "secret", and a lessons
// cluster with a lesson id acme has nowhere.
func (s *learnREST) other(t *testing.T) {
	t.Helper()
	s.cluster(t, "other", "c1", lessons.Name, "other tenant secret scope", 3, 6)
	s.cluster(t, "other", "secret", icl.Name, "other tenant secret scope", 0, 1)
	md := exportOf(t, s.stored(t, "other", "c1").State) +
		"\n## Lother: use queue = urgent\n\n- decision: other tenant secret decision\n- when: refunds\n- evidence: imported\n- status: active\n"
	c := s.stored(t, "other", "c1")
	next, err := lessons.Import(c.State, []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	c.State = next
	if err := s.store.UpdateCluster(context.Background(), c, c.Version); err != nil {
		t.Fatal(err)
	}
}

func exportOf(t *testing.T, state json.RawMessage) string {
	t.Helper()
	md, err := lessons.Export(state)
	if err != nil {
		t.Fatal(err)
	}
	return string(md)
}

type clusterList struct {
	Clusters []struct {
		ID, System, Description string
		Trajectories            int
		CreatedAt               string `json:"created_at"`
		UpdatedAt               string `json:"updated_at"`
	}
}

type clusterDetail struct {
	ID, System, Description string
	Trajectories, Entries   int
	Version                 int64
	Applied                 []string
	State                   json.RawMessage
}

type lessonItem struct {
	ID, Cluster, Decision, Evidence, Status, Reason string
	When                                            []string
	NotWhen                                         []string `json:"not_when"`
	Provenance                                      struct{ Tasks, Attempts []string }
	SupersededBy                                    []string `json:"superseded_by"`
	History                                         []lessons.Change
}

type lessonList struct{ Lessons []lessonItem }

func TestLearnREST_Clusters(t *testing.T) {
	s := newLearnREST(t, inmem.New())
	s.acme(t)
	s.other(t)

	var list clusterList
	r := s.do(t, "GET", "/api/clusters", acmeKey, "", nil)
	r.json(t, &list)
	var ids []string
	for _, c := range list.Clusters {
		ids = append(ids, c.ID+"/"+c.System)
		if c.CreatedAt == "" || c.UpdatedAt == "" || c.Trajectories == 0 {
			t.Errorf("cluster %s: %+v", c.ID, c)
		}
	}
	if r.status != 200 || !slices.Equal(ids, []string{"c1/icl", "c2/reasoning_bank", "c3/lessons", "c4/hippocam"}) {
		t.Fatalf("GET /api/clusters: %d %v", r.status, ids)
	}
	if strings.Contains(string(r.body), "other tenant") {
		t.Fatalf("acme sees the other tenant: %s", r.body)
	}

	t.Run("States", func(t *testing.T) {
		want := map[string]string{ // what each system's rendered state must show
			"c1": `"trajectories":[{"id":"t000"`, "c2": `"items":[{"title"`, "c3": `"history":[{"update"`, "c4": `"absorbed":[{"id":"t000"`,
		}
		for id, fragment := range want {
			var d clusterDetail
			r := s.do(t, "GET", "/api/clusters/"+id, acmeKey, "", nil)
			r.json(t, &d)
			c := s.stored(t, "acme", id)
			if r.status != 200 || d.ID != id || d.System != c.System || d.Version != c.Version || !slices.Equal(d.Applied, c.Applied) {
				t.Fatalf("GET %s: %d %s", id, r.status, r.body)
			}
			if n := s.systems[c.System].Entries(c.State); d.Entries != n || n == 0 {
				t.Errorf("%s: entries %d, the system counts %d", id, d.Entries, n)
			}
			if !strings.Contains(string(d.State), fragment) {
				t.Errorf("%s: state lacks %s: %s", id, fragment, d.State)
			}
		}
		var h struct{ Context []hippocam.Message }
		var d clusterDetail
		s.do(t, "GET", "/api/clusters/c4", acmeKey, "", nil).json(t, &d)
		if err := json.Unmarshal(d.State, &h); err != nil || len(h.Context) == 0 {
			t.Fatalf("the hippocam cluster's context is not shown: %v %s", err, d.State)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		if r := s.do(t, "DELETE", "/api/clusters/c4", acmeKey, "", nil); r.status != 204 {
			t.Fatalf("DELETE c4: %d %s", r.status, r.body)
		}
		if r := s.do(t, "GET", "/api/clusters/c4", acmeKey, "", nil); r.status != 404 {
			t.Fatalf("GET deleted c4: %d", r.status)
		}
		if r := s.do(t, "DELETE", "/api/clusters/c4", acmeKey, "", nil); r.status != 404 {
			t.Fatalf("DELETE c4 again: %d", r.status)
		}
		var list clusterList
		s.do(t, "GET", "/api/clusters", acmeKey, "", nil).json(t, &list)
		if len(list.Clusters) != 3 {
			t.Fatalf("after the delete: %+v", list)
		}
	})
}

// Another tenant's clusters and lessons are out of reach whatever the request says, and look
// exactly like ids that exist nowhere. Run on the in-memory store and on SQLite.
func TestLearnREST_TenantIsolation(t *testing.T) {
	stores := map[string]func(t *testing.T) hippocam.Store{
		"inmem": func(t *testing.T) hippocam.Store { return inmem.New() },
		"sqlite": func(t *testing.T) hippocam.Store {
			db := sqlite.New(t.TempDir() + "/h.db")
			if err := db.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) { testIsolation(t, newLearnREST(t, open(t))) })
	}
}

func testIsolation(t *testing.T, s *learnREST) {
	s.acme(t)
	s.other(t)
	otherBefore := map[string]int64{"c1": s.stored(t, "other", "c1").Version, "secret": s.stored(t, "other", "secret").Version}
	notFound := func(method, path string, body []byte) {
		t.Helper()
		r := s.do(t, method, path, acmeKey, "", body)
		if r.status != 404 {
			t.Errorf("%s %s: %d %s", method, path, r.status, r.body)
		}
		if strings.Contains(string(r.body), "other tenant") || strings.Contains(string(r.body), "Lother:") {
			t.Errorf("%s %s shows the other tenant: %s", method, path, r.body)
		}
	}
	// Not yours and does not exist: the same answer, but for the id echoed.
	foreign := s.do(t, "GET", "/api/clusters/secret", acmeKey, "", nil)
	absent := s.do(t, "GET", "/api/clusters/nosuch", acmeKey, "", nil)
	if foreign.status != 404 || strings.ReplaceAll(string(foreign.body), "secret", "nosuch") != string(absent.body) {
		t.Fatalf("foreign %d %s, absent %d %s", foreign.status, foreign.body, absent.status, absent.body)
	}
	for _, path := range []string{
		"/api/clusters/secret", "/api/clusters/..%2Fsecret", "/api/clusters/other%2Fsecret", "/api/clusters/secret%00",
		"/api/clusters/secret%27%20OR%20%271%27=%271", "/api/clusters/%25", "/api/clusters/secret/", "/api/clusters/secret?tenant=other",
		"/api/lessons?cluster=secret", "/api/lessons/export?cluster=secret", "/api/lessons?cluster=c1%27--",
	} {
		notFound("GET", path, nil)
	}
	notFound("DELETE", "/api/clusters/secret", nil)
	notFound("DELETE", "/api/lessons/Lother", nil)
	notFound("DELETE", "/api/lessons/Lother?cluster=secret", nil)
	notFound("POST", "/api/lessons/import?cluster=secret&replace=all", []byte(exportOf(t, nil)))

	// acme's c1 is its own icl cluster, never the other tenant's lessons cluster of that id.
	var d clusterDetail
	s.do(t, "GET", "/api/clusters/c1", acmeKey, "", nil).json(t, &d)
	if d.System != icl.Name || strings.Contains(string(d.State), "other tenant") {
		t.Fatalf("acme's c1: %+v", d)
	}
	if r := s.do(t, "POST", "/api/lessons/import?cluster=c1", acmeKey, "", []byte(exportOf(t, s.stored(t, "other", "c1").State))); r.status != 400 {
		t.Fatalf("import into acme's icl cluster c1: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/api/lessons", "/api/lessons/export", "/api/clusters"} {
		r := s.do(t, "GET", path, acmeKey, "", nil)
		if r.status != 200 || strings.Contains(string(r.body), "Lother") || strings.Contains(string(r.body), "other tenant") {
			t.Errorf("GET %s: %d shows the other tenant: %s", path, r.status, r.body)
		}
	}
	if r := s.do(t, "GET", "/api/clusters", "k-wrong", "", nil); r.status != 401 {
		t.Errorf("a wrong key: %d", r.status)
	}
	if r := s.do(t, "GET", "/api/lessons", "", "", nil); r.status != 401 {
		t.Errorf("no key: %d", r.status)
	}
	for id, v := range otherBefore {
		if c := s.stored(t, "other", id); c.Version != v {
			t.Errorf("the other tenant's %s moved: version %d, was %d", id, c.Version, v)
		}
	}
	var theirs lessonList
	s.do(t, "GET", "/api/lessons?status=active", otherKey, "", nil).json(t, &theirs)
	if !slices.ContainsFunc(theirs.Lessons, func(l lessonItem) bool {
		return l.ID == "Lother" && l.Cluster == "c1"
	}) {
		t.Fatalf("the other tenant lost its lesson: %+v", theirs)
	}
}

func TestLearnREST_Lessons(t *testing.T) {
	s := newLearnREST(t, inmem.New())
	s.acme(t)
	st, err := lessons.ParseState(s.stored(t, "acme", "c3").State)
	if err != nil || len(st.Active()) == 0 {
		t.Fatalf("the lessons cluster learned nothing: %v", err)
	}

	var list lessonList
	r := s.do(t, "GET", "/api/lessons", acmeKey, "", nil)
	r.json(t, &list)
	if r.status != 200 || len(list.Lessons) != len(st.Lessons) {
		t.Fatalf("GET /api/lessons: %d %s", r.status, r.body)
	}
	for i, l := range list.Lessons {
		k := st.Lessons[i]
		if l.ID != k.ID || l.Cluster != "c3" || l.Decision != k.Decision || l.Status != string(k.Status) || l.Evidence != k.Evidence ||
			!slices.Equal(l.Provenance.Attempts, k.Provenance.Attempts) || len(l.Provenance.Tasks) == 0 || len(l.History) != len(k.History) ||
			l.When == nil || l.NotWhen == nil || l.SupersededBy == nil {
			t.Errorf("lesson %d: %+v, stored %+v", i, l, k)
		}
	}
	for _, field := range []string{`"when":`, `"not_when":`, `"evidence":`, `"superseded_by":`, `"reason":`, `"history":`, `"provenance":{"tasks":`} {
		if !strings.Contains(string(r.body), field) {
			t.Errorf("GET /api/lessons lacks %s", field)
		}
	}

	t.Run("ExportImportRoundTrip", func(t *testing.T) {
		r := s.do(t, "GET", "/api/lessons/export", acmeKey, "", nil)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/markdown") || string(r.body) != exportOf(t, s.stored(t, "acme", "c3").State) {
			t.Fatalf("export: %d %q\n%s", r.status, r.header.Get("Content-Type"), r.body)
		}
		before := s.stored(t, "acme", "c3")
		var out struct {
			Cluster         string
			Lessons, Active int
			Changed         bool
		}
		imp := s.do(t, "POST", "/api/lessons/import", acmeKey, "", r.body)
		imp.json(t, &out)
		if after := s.stored(t, "acme", "c3"); imp.status != 200 || out.Changed || out.Cluster != "c3" || out.Lessons != len(st.Lessons) ||
			out.Active != len(st.Active()) || after.Version != before.Version || string(after.State) != string(before.State) {
			t.Fatalf("re-import of the export: %d %s; version %d → %d", imp.status, imp.body, before.Version, after.Version)
		}

		first := st.Active()[0]
		edited := strings.Replace(string(r.body), "- decision: "+first.Decision, "- decision: a decision its user rewrote", 1)
		imp = s.do(t, "POST", "/api/lessons/import?cluster=c3", acmeKey, "", []byte(edited))
		imp.json(t, &out)
		l := mustLesson(t, s.stored(t, "acme", "c3").State, first.ID)
		if imp.status != 200 || !out.Changed || l.Decision != "a decision its user rewrote" || l.History[len(l.History)-1].Event != "edited" {
			t.Fatalf("an edited import: %d %s; lesson %+v", imp.status, imp.body, l)
		}
	})

	t.Run("ImportBad", func(t *testing.T) {
		before := s.stored(t, "acme", "c3")
		md := exportOf(t, before.State)
		lines := strings.Split(md, "\n")
		at := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "- evidence:") })
		lines = slices.Insert(lines, at+1, "this line is not a field")
		cases := map[string]struct {
			path, body, want string
		}{
			"Garbage":     {"/api/lessons/import", strings.Join(lines, "\n"), "line " + strconv.Itoa(at+2)},
			"Empty":       {"/api/lessons/import", "  \n", "lessons file"},
			"BadStatus":   {"/api/lessons/import", strings.Replace(md, "- status: active", "- status: maybe", 1), "line "},
			"NotLessons":  {"/api/lessons/import?cluster=c1", md, "not lessons"},
			"NoSuchOne":   {"/api/lessons/import?cluster=nosuch", md, "nosuch"},
			"BadHeading":  {"/api/lessons/import", md + "\n## L99: nonsense\n", "line "},
			"DuplicateID": {"/api/lessons/import", md + md[strings.Index(md, "\n## "):], "appears twice"},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				r := s.do(t, "POST", tc.path, acmeKey, "", []byte(tc.body))
				want := 400
				if name == "NoSuchOne" {
					want = 404
				}
				if r.status != want || !strings.Contains(string(r.body), tc.want) {
					t.Fatalf("%d %s, want %d naming %q", r.status, r.body, want, tc.want)
				}
				if after := s.stored(t, "acme", "c3"); after.Version != before.Version {
					t.Fatalf("a refused import changed the cluster: version %d → %d", before.Version, after.Version)
				}
			})
		}
	})

	t.Run("DeleteKeepsHistory", func(t *testing.T) {
		id := st.Active()[len(st.Active())-1].ID
		if r := s.do(t, "DELETE", "/api/lessons/"+id, acmeKey, "", nil); r.status != 204 {
			t.Fatalf("DELETE %s: %d %s", id, r.status, r.body)
		}
		c := s.stored(t, "acme", "c3")
		l := mustLesson(t, c.State, id)
		last := l.History[len(l.History)-1]
		if l.Status != lessons.Superseded || l.Reason != lessons.DeletedByUser || len(l.SupersededBy) != 0 || last.Event != "withdrawn" || last.Note != lessons.DeletedByUser {
			t.Fatalf("deleted lesson: %+v", l)
		}
		var list lessonList
		s.do(t, "GET", "/api/lessons?status=superseded", acmeKey, "", nil).json(t, &list)
		if !slices.ContainsFunc(list.Lessons, func(x lessonItem) bool {
			return x.ID == id && x.Reason == lessons.DeletedByUser && len(x.History) == len(l.History)
		}) {
			t.Fatalf("the deleted lesson is not listed as superseded: %+v", list)
		}
		s.do(t, "GET", "/api/lessons?status=active", acmeKey, "", nil).json(t, &list)
		for _, x := range list.Lessons {
			if x.ID == id {
				t.Fatalf("the deleted lesson is still listed as active")
			}
		}
		// Its export says so, and importing that export changes nothing; deleting it again
		// neither.
		md := s.do(t, "GET", "/api/lessons/export?cluster=c3", acmeKey, "", nil).body
		if !strings.Contains(string(md), "- status: superseded — "+lessons.DeletedByUser) {
			t.Fatalf("the export does not show the deletion:\n%s", md)
		}
		if r := s.do(t, "POST", "/api/lessons/import", acmeKey, "", md); r.status != 200 || !strings.Contains(string(r.body), `"changed":false`) {
			t.Fatalf("re-import after the delete: %d %s", r.status, r.body)
		}
		if r := s.do(t, "DELETE", "/api/lessons/"+id, acmeKey, "", nil); r.status != 204 || s.stored(t, "acme", "c3").Version != c.Version {
			t.Fatalf("a second delete: %d, version %d → %d", r.status, c.Version, s.stored(t, "acme", "c3").Version)
		}
		for _, path := range []string{"/api/lessons/L999", "/api/lessons/" + id + "?cluster=nosuch", "/api/lessons/..%2F" + id} {
			if r := s.do(t, "DELETE", path, acmeKey, "", nil); r.status != 404 {
				t.Errorf("DELETE %s: %d %s", path, r.status, r.body)
			}
		}
	})

	t.Run("SeveralClusters", func(t *testing.T) {
		s.cluster(t, "acme", "c5", lessons.Name, "acme second lessons", 3, 6)
		id := st.Lessons[0].ID // in both c3 and c5
		r := s.do(t, "DELETE", "/api/lessons/"+id, acmeKey, "", nil)
		if r.status != 400 || !strings.Contains(string(r.body), "c3, c5") {
			t.Fatalf("an ambiguous delete: %d %s", r.status, r.body)
		}
		if r := s.do(t, "POST", "/api/lessons/import", acmeKey, "", []byte(exportOf(t, s.stored(t, "acme", "c3").State))); r.status != 400 || !strings.Contains(string(r.body), "?cluster=") {
			t.Fatalf("an import that names no cluster, with two: %d %s", r.status, r.body)
		}
		md := string(s.do(t, "GET", "/api/lessons/export", acmeKey, "", nil).body)
		if !strings.Contains(md, "# Cluster c3\n") || !strings.Contains(md, "# Cluster c5\n") ||
			!strings.Contains(md, exportOf(t, s.stored(t, "acme", "c3").State)) || !strings.Contains(md, exportOf(t, s.stored(t, "acme", "c5").State)) {
			t.Fatalf("the combined export:\n%s", md)
		}
		var list lessonList
		s.do(t, "GET", "/api/lessons?cluster=c5", acmeKey, "", nil).json(t, &list)
		for _, l := range list.Lessons {
			if l.Cluster != "c5" {
				t.Fatalf("?cluster=c5 lists %s of %s", l.ID, l.Cluster)
			}
		}
		if r := s.do(t, "DELETE", "/api/lessons/"+id+"?cluster=c5", acmeKey, "", nil); r.status != 204 {
			t.Fatalf("DELETE %s?cluster=c5: %d %s", id, r.status, r.body)
		}
		if l := mustLesson(t, s.stored(t, "acme", "c5").State, id); l.Reason != lessons.DeletedByUser {
			t.Fatalf("c5's %s: %+v", id, l)
		}
		if l := mustLesson(t, s.stored(t, "acme", "c3").State, id); l.Reason == lessons.DeletedByUser {
			t.Fatalf("deleting c5's %s deleted c3's too", id)
		}
	})
}

func mustLesson(t *testing.T, state json.RawMessage, id string) *lessons.Lesson {
	t.Helper()
	st, err := lessons.ParseState(state)
	if err != nil {
		t.Fatal(err)
	}
	l := st.Lesson(id)
	if l == nil {
		t.Fatalf("no lesson %s", id)
	}
	return l
}

// Deletes of many lessons of one cluster at once all land: each is committed at the version it
// read, and read again when another landed first.
func TestLearnREST_ConcurrentDeletes(t *testing.T) {
	s := newLearnREST(t, inmem.New())
	s.acme(t)
	md := exportOf(t, s.stored(t, "acme", "c3").State)
	const n = 12
	var ids []string
	for i := range n {
		id := "Lc" + strconv.Itoa(i)
		ids = append(ids, id)
		md += "\n## " + id + ": use queue = q" + strconv.Itoa(i) + "\n\n- decision: take queue q" + strconv.Itoa(i) + "\n- when: case " + strconv.Itoa(i) + "\n- status: active\n"
	}
	if r := s.do(t, "POST", "/api/lessons/import?cluster=c3", acmeKey, "", []byte(md)); r.status != 200 || !strings.Contains(string(r.body), `"changed":true`) {
		t.Fatalf("import: %d %s", r.status, r.body)
	}
	var wg sync.WaitGroup
	status := make([]int, n)
	for i, id := range ids {
		wg.Go(func() { status[i] = s.do(t, "DELETE", "/api/lessons/"+id, acmeKey, "", nil).status })
	}
	wg.Wait()
	st, err := lessons.ParseState(s.stored(t, "acme", "c3").State)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if l := st.Lesson(id); status[i] != 204 || l == nil || l.Reason != lessons.DeletedByUser {
			t.Errorf("DELETE %s: %d, lesson %+v", id, status[i], l)
		}
	}
}

// importReply is the body of POST /api/lessons/import.
type importReply struct {
	Cluster                             string
	Lessons, Active                     int
	Changed                             bool
	DryRun                              bool `json:"dry_run"`
	Added, Edited, Withdrawn, Unchanged struct {
		Count int
		IDs   []string
	}
}

// Learning under bad input: a body that parses but holds no lesson entry (plain text, random
// bytes, an HTML error page, an empty lessons file) is a 400 that changes nothing, unless the
// request asks to replace everything (?replace=all); ?dry_run=1 answers what an import would
// change and changes nothing.
func TestLearnREST_ImportBadInput(t *testing.T) {
	s := newLearnREST(t, inmem.New())
	s.acme(t)
	before := s.stored(t, "acme", "c3")
	st, err := lessons.ParseState(before.State)
	if err != nil || len(st.Active()) < 2 {
		t.Fatalf("the lessons cluster holds %d lessons in force, want 2 or more: %v", len(st.Active()), err)
	}
	unchanged := func(t *testing.T, what string) {
		t.Helper()
		if after := s.stored(t, "acme", "c3"); after.Version != before.Version || string(after.State) != string(before.State) {
			t.Fatalf("%s changed the cluster: version %d → %d", what, before.Version, after.Version)
		}
	}

	random := make([]byte, 3000)
	for i := range random {
		random[i] = byte(i*7919 + i/3)
	}
	for name, body := range map[string][]byte{
		"Text":         []byte("hello world"),
		"Random":       random,
		"HTML":         []byte("<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n<body><h1>502 Bad Gateway</h1><hr>nginx</body></html>\n"),
		"EmptyLessons": []byte("# Lessons\n"),
		"EmptyExport":  []byte(exportOf(t, nil)),
		"NoBody":       nil,
	} {
		t.Run(name, func(t *testing.T) {
			for _, path := range []string{"/api/lessons/import", "/api/lessons/import?dry_run=1"} {
				r := s.do(t, "POST", path, acmeKey, "", body)
				if r.status != 400 || !strings.Contains(string(r.body), "no lesson entry") || !strings.Contains(string(r.body), "replace=all") {
					t.Fatalf("POST %s: %d %s, want a 400 saying the file holds no lesson entry", path, r.status, r.body)
				}
			}
			unchanged(t, name)
		})
	}
	for _, path := range []string{"/api/lessons/import?replace=everything", "/api/lessons/import?dry_run=maybe"} {
		if r := s.do(t, "POST", path, acmeKey, "", []byte(exportOf(t, before.State))); r.status != 400 {
			t.Fatalf("POST %s: %d %s, want 400", path, r.status, r.body)
		}
	}
	unchanged(t, "bad parameters")

	// A tenant with no lessons cluster at all hears that the file is wrong, not that it has no
	// cluster: the file is the first mistake to fix.
	t.Run("NoClusterYet", func(t *testing.T) {
		empty := newLearnREST(t, inmem.New())
		if r := empty.do(t, "POST", "/api/lessons/import", acmeKey, "", []byte("hello world")); r.status != 400 || !strings.Contains(string(r.body), "no lesson entry") {
			t.Fatalf("POST a text file with no lessons cluster: %d %s, want a 400 about the file", r.status, r.body)
		}
	})

	t.Run("DryRun", func(t *testing.T) {
		md := exportOf(t, before.State)
		first, second := st.Active()[0], st.Active()[1]
		edited := strings.Replace(md, "- decision: "+first.Decision+"\n", "- decision: rewritten by its user\n", 1)
		at := strings.Index(edited, "\n## "+second.ID+":")
		next := strings.Index(edited[at+1:], "\n## ")
		if next < 0 {
			edited = edited[:at+1]
		} else {
			edited = edited[:at] + edited[at+1+next:]
		}
		edited += "\n## use brand_new = yes\n\n- decision: a lesson its user wrote\n"
		var out importReply
		r := s.do(t, "POST", "/api/lessons/import?dry_run=1", acmeKey, "", []byte(edited))
		r.json(t, &out)
		newID := "L" + strconv.Itoa(st.Next+1)
		if r.status != 200 || !out.DryRun || !out.Changed || out.Cluster != "c3" ||
			!slices.Equal(out.Added.IDs, []string{newID}) || out.Added.Count != 1 ||
			!slices.Equal(out.Edited.IDs, []string{first.ID}) || out.Edited.Count != 1 ||
			!slices.Equal(out.Withdrawn.IDs, []string{second.ID}) || out.Withdrawn.Count != 1 ||
			out.Unchanged.Count != len(st.Lessons)-2 || out.Lessons != len(st.Lessons)+1 || out.Active != len(st.Active()) {
			t.Fatalf("dry run: %d %s", r.status, r.body)
		}
		unchanged(t, "a dry run")

		var done importReply
		r = s.do(t, "POST", "/api/lessons/import", acmeKey, "", []byte(edited))
		r.json(t, &done)
		out.DryRun = false
		if r.status != 200 || !reflect.DeepEqual(done, out) {
			t.Fatalf("the import after its dry run: %d %s, want what the dry run said", r.status, r.body)
		}
		if l := mustLesson(t, s.stored(t, "acme", "c3").State, second.ID); l.Status != lessons.Superseded {
			t.Fatalf("the lesson left out is %s", l.Status)
		}
	})

	t.Run("ReplaceAll", func(t *testing.T) {
		var out importReply
		r := s.do(t, "POST", "/api/lessons/import?replace=all&dry_run=1", acmeKey, "", nil)
		r.json(t, &out)
		cur := s.stored(t, "acme", "c3")
		if r.status != 200 || !out.DryRun || out.Active != 0 || out.Withdrawn.Count == 0 || s.stored(t, "acme", "c3").Version != cur.Version {
			t.Fatalf("a dry run of replacing everything with nothing: %d %s", r.status, r.body)
		}
		r = s.do(t, "POST", "/api/lessons/import?replace=all", acmeKey, "", []byte("# Lessons\n"))
		r.json(t, &out)
		after, err := lessons.ParseState(s.stored(t, "acme", "c3").State)
		if r.status != 200 || out.DryRun || !out.Changed || out.Active != 0 || err != nil || len(after.Active()) != 0 || len(after.Lessons) != out.Lessons {
			t.Fatalf("replacing everything with an empty file: %d %s", r.status, r.body)
		}
	})
}
