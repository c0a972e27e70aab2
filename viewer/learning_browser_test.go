package viewer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/hippocam/hippocam/httpapi"
)

// The learning pages against a real server that learns (routed, over the lessons system, the
// simulated model upstream, an API key): two task keys of two attempts each end with their
// outcomes, so that the second key's lessons supersede the first's; a third task is routed to
// the same cluster and reads them as its advisory; the user deletes one lesson. The viewer shows
// the cluster and its state, every lesson with why it changed and what it came from, exports the
// lessons file, and shows each session's routing, advisory and outcome.
func TestViewerBrowserLearning(t *testing.T) {
	t.Parallel()
	const key = "k-acme"
	s := newLearningServer(t, key, "lessons")
	cluster := s.startTask(t, "a1", "sales-1", salesTask)
	s.endTask(t, "a1", `{"feedback":"feedback: status_filter = shipped right","success":true,"reward":1,"attempts":2}`)
	s.startTask(t, "a2", "sales-1", salesTask)
	s.endTask(t, "a2", `{"feedback":"feedback: status_filter = all wrong","attempts":2}`)
	s.startTask(t, "b1", "sales-2", salesTask)
	s.endTask(t, "b1", `{"feedback":"feedback: status_filter = shipped wrong","attempts":2}`)
	s.startTask(t, "b2", "sales-2", salesTask)
	s.endTask(t, "b2", `{"feedback":"feedback: status_filter = pending right","attempts":2}`)
	if c := s.startTask(t, "c1", "sales-3", salesTask); c != cluster {
		t.Fatalf("the third task went to cluster %q, want %q", c, cluster)
	}
	s.startTask(t, "quiet", "", salesTask, httpapi.LearnHeader, "off")

	// What the API says, to hold the pages to.
	var lessons struct {
		Lessons []struct {
			ID           string   `json:"id"`
			Status       string   `json:"status"`
			SupersededBy []string `json:"superseded_by"`
			Reason       string   `json:"reason"`
		} `json:"lessons"`
	}
	s.getJSON(t, "/api/lessons", &lessons)
	byID := map[string]string{}
	var active []string
	for _, l := range lessons.Lessons {
		byID[l.ID] = l.Status + " " + strings.Join(l.SupersededBy, ",") + " " + l.Reason
		if l.Status == "active" {
			active = append(active, l.ID)
		}
	}
	want := map[string]string{
		"L1": "superseded L3 newer evidence under the same conditions",
		"L2": "superseded L4 newer evidence under the same conditions",
		"L3": "active  ", "L4": "active  ",
	}
	if !reflect.DeepEqual(byID, want) {
		t.Fatalf("lessons %v, want %v", byID, want)
	}
	if status, body := s.call(t, http.MethodDelete, "/api/lessons/L4", nil); status != http.StatusNoContent {
		t.Fatalf("DELETE /api/lessons/L4: %d %s", status, body)
	}
	var c1 struct {
		Learning struct {
			Advisory       string `json:"advisory"`
			AdvisoryTokens int    `json:"advisory_tokens"`
		} `json:"learning"`
	}
	s.getJSON(t, "/api/sessions/c1", &c1)
	if c1.Learning.AdvisoryTokens == 0 || !strings.Contains(c1.Learning.Advisory, "use status_filter = pending") {
		t.Fatalf("c1's advisory %+v lacks the lessons learned", c1.Learning)
	}

	b := newBrowser(t)
	b.do("open the page and give the key",
		chromedp.Navigate(s.URL+"/#/clusters"),
		chromedp.WaitVisible(chromedp.CSS(`#api-key`)),
		chromedp.SendKeys(chromedp.CSS(`#api-key`), key),
		chromedp.Click(chromedp.CSS(`#api-key-save`)),
		chromedp.WaitNotVisible(chromedp.CSS(`#auth`)))

	// The clusters page: the one cluster, its system, scope, trajectories.
	row := `[data-testid="cluster-row"][data-cluster-id="` + cluster + `"]`
	b.do("see the cluster listed", chromedp.WaitVisible(chromedp.CSS(row)))
	if !evaluate[bool](b, `document.querySelector('[data-testid="nav-clusters"]').classList.contains('active')`) {
		t.Error("the Clusters tab is not marked as the page shown")
	}
	for sel, want := range map[string]string{
		`[data-testid="cluster-count"]`:               "1",
		row + ` [data-testid="cluster-system"]`:       "lessons",
		row + ` [data-testid="cluster-scope"]`:        "Sales report",
		row + ` [data-testid="cluster-trajectories"]`: "4",
	} {
		if got := b.text(sel); got != want {
			t.Errorf("%s reads %q, want %q", sel, got, want)
		}
	}

	// Opening it shows its state as the lessons system keeps it.
	b.do("open the cluster",
		chromedp.Click(chromedp.CSS(row+` [data-testid="cluster-link"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="cluster-detail"] [data-testid="state-lessons"]`)))
	if got := b.text(`[data-testid="cluster-title"]`); got != cluster {
		t.Errorf("cluster title %q", got)
	}
	if got := b.text(`[data-testid="cluster-entries"]`); got != "1" {
		t.Errorf("entries %q, want 1 (the lesson still in force)", got)
	}
	if got := evaluate[[]string](b, `[...document.querySelectorAll('[data-testid="state-lessons"] [data-testid="lesson"]')].map(e => e.dataset.lessonId + ':' + e.dataset.status)`); !reflect.DeepEqual(got, []string{"L1:superseded", "L2:superseded", "L3:active", "L4:superseded"}) {
		t.Errorf("the cluster's state shows lessons %v", got)
	}

	// The lessons page: the one in force, the superseded with why, the deleted one withdrawn.
	b.do("open the lessons page",
		chromedp.Click(chromedp.CSS(`[data-testid="nav-lessons"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="lessons-active"] [data-testid="lesson"]`)))
	if got := b.lessons("lessons-active"); !reflect.DeepEqual(got, []string{"L3"}) {
		t.Errorf("active lessons %v, want [L3]", got)
	}
	if got := b.lessons("lessons-superseded"); !reflect.DeepEqual(got, []string{"L1", "L2", "L4"}) {
		t.Errorf("superseded lessons %v, want [L1 L2 L4]", got)
	}
	if got := b.text(`[data-testid="lessons-summary"]`); got != "1 active lesson · 3 superseded · from 1 cluster" {
		t.Errorf("summary %q", got)
	}
	l1 := `[data-testid="lesson"][data-lesson-id="L1"]`
	if got := b.text(l1 + ` [data-testid="lesson-why"]`); got != "Superseded byL3 · newer evidence under the same conditions" {
		t.Errorf("why L1 was superseded: %q", got)
	}
	l4 := `[data-testid="lesson"][data-lesson-id="L4"]`
	if got := b.text(l4 + ` [data-testid="lesson-status"]`); got != "withdrawn" {
		t.Errorf("L4's status %q, want withdrawn", got)
	}
	if got := b.text(l4 + ` [data-testid="lesson-why"]`); got != "Withdrawndeleted by the user" {
		t.Errorf("why L4 is out of force: %q", got)
	}
	l3 := `[data-testid="lesson"][data-lesson-id="L3"]`
	for sel, want := range map[string]string{
		l3 + ` [data-testid="lesson-rule"]`:     "use status_filter = pending when: revenue, weekly",
		l3 + ` [data-testid="lesson-decision"]`: "choose pending for status_filter",
		l3 + ` [data-testid="lesson-kind"]`:     "use",
		l3 + ` [data-testid="lesson-cluster"]`:  cluster,
	} {
		if got := b.text(sel); got != want {
			t.Errorf("%s reads %q, want %q", sel, got, want)
		}
	}
	if got := evaluate[[]string](b, `[...document.querySelectorAll('`+l3+` [data-testid="lesson-condition"]')].map(e => e.textContent)`); !reflect.DeepEqual(got, []string{"revenue", "weekly"}) {
		t.Errorf("L3's conditions %v", got)
	}
	if got := b.text(l3 + ` [data-testid="lesson-provenance"]`); got != "1 task sales-2 · 2 attempts: b1, b2" {
		t.Errorf("L3's provenance %q", got)
	}

	// Its history is folded until asked; what replaced a lesson is one click away.
	if evaluate[bool](b, `document.querySelector('`+l1+` [data-testid="lesson-history"]').open`) {
		t.Error("L1's history is open before it is asked for")
	}
	b.do("open L1's history", chromedp.Click(chromedp.CSS(l1+` [data-testid="lesson-history"] summary`)))
	if got := evaluate[[]string](b, `[...document.querySelectorAll('`+l1+` [data-testid="lesson-change"]')].map(e => e.dataset.event)`); !reflect.DeepEqual(got, []string{"added", "superseded"}) {
		t.Errorf("L1's history %v", got)
	}
	b.do("show the lesson that replaced L1", chromedp.Click(chromedp.CSS(l1+` [data-testid="superseded-by"]`)))
	b.waitUntil("L3 to be pointed out", `document.querySelector('`+l3+`').classList.contains('flash')`)

	// The filter keeps one section.
	b.do("show only the active lessons", chromedp.Click(chromedp.CSS(`[data-testid="lessons-filter-active"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="lessons-superseded"]`)))
	b.do("show every lesson again", chromedp.Click(chromedp.CSS(`[data-testid="lessons-filter-all"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="lessons-superseded"]`)))
	if !evaluate[bool](b, `document.querySelector('`+l1+` [data-testid="lesson-history"]').open`) {
		t.Error("L1's history closed when the page was drawn again")
	}

	// The export button downloads the lessons file, with the key.
	status, md := s.call(t, http.MethodGet, "/api/lessons/export", nil)
	if status != http.StatusOK || !strings.Contains(string(md), "## L3: use status_filter = pending") {
		t.Fatalf("GET /api/lessons/export: %d %s", status, md)
	}
	name, got := b.download(`[data-testid="export-lessons"]`)
	if got != string(md) {
		t.Errorf("the downloaded file differs from GET /api/lessons/export:\n%s", got)
	}
	if want := "lessons-" + cluster + ".md"; name != want {
		t.Errorf("downloaded as %q, want %q", name, want)
	}

	// An attempt in a lesson's provenance opens its session: routed (created the cluster), no
	// advisory, ended with its feedback.
	b.do("open attempt b1 from L3",
		chromedp.Click(chromedp.CSS(l3+` [data-testid="attempt-link"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="session-learning"]`)))
	if got := b.sessionShown(); got != "b1" {
		t.Errorf("the attempt link opened %q, want b1", got)
	}
	b.do("open the first attempt",
		chromedp.Click(chromedp.CSS(`[data-testid="session-item"][data-session-id="a1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="outcome-feedback"]`)))
	for sel, want := range map[string]string{
		`[data-testid="learning-decision"]`: "create",
		`[data-testid="learning-cluster"]`:  cluster,
		`[data-testid="learning-system"]`:   "lessons",
		`[data-testid="learning-task"]`:     "task sales-1 · 2 attempts",
		`[data-testid="outcome-feedback"]`:  "feedback: status_filter = shipped right",
		`[data-testid="outcome-success"]`:   "success",
		`[data-testid="outcome-reward"]`:    "reward 1",
	} {
		if got := b.text(sel); got != want {
			t.Errorf("a1: %s reads %q, want %q", sel, got, want)
		}
	}
	if got := b.text(`[data-testid="learning-reason"]`); got == "" {
		t.Error("a1: the router's reason is not shown")
	}
	if !b.visible(`[data-testid="advisory-none"]`) {
		t.Error("a1: the first task of a new cluster shows an advisory")
	}

	// The third task: reused the cluster, read the lessons as its advisory (also in its
	// context, as an advisory message), still open; its outcome shows once it is posted.
	b.do("open the third task",
		chromedp.Click(chromedp.CSS(`[data-testid="session-item"][data-session-id="c1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="advisory"]`)))
	if got := b.text(`[data-testid="learning-decision"]`); got != "match" {
		t.Errorf("c1's decision %q, want match (its text names the cluster's scope)", got)
	}
	if got := b.text(`[data-testid="advisory"]`); got != c1.Learning.Advisory {
		t.Errorf("c1's advisory reads %q, want %q", got, c1.Learning.Advisory)
	}
	if got := b.text(`[data-testid="advisory-tokens"]`); got != fmt.Sprintf("%d tokens", c1.Learning.AdvisoryTokens) {
		t.Errorf("c1's advisory size %q, want %d tokens", got, c1.Learning.AdvisoryTokens)
	}
	if got := evaluate[string](b, `document.querySelector('#context [data-kind="advisory"] [data-testid="kind-badge"]').textContent`); got != "advisory" {
		t.Errorf("c1's advisory message is labelled %q", got)
	}
	if !b.visible(`[data-testid="outcome-open"]`) {
		t.Error("c1 shows an outcome before one was posted")
	}
	s.endTask(t, "c1", `{"feedback":"feedback: status_filter = pending right"}`)
	b.do("see c1's outcome arrive", chromedp.WaitVisible(chromedp.CSS(`[data-testid="outcome-feedback"]`)))
	if got := b.text(`[data-testid="outcome-feedback"]`); got != "feedback: status_filter = pending right" {
		t.Errorf("c1's outcome %q", got)
	}
	if evaluate[bool](b, `document.querySelector('[data-testid="outcome-success"]') !== null`) {
		t.Error("c1 shows a success the client never reported")
	}

	// The cluster link on the session opens the cluster.
	b.do("follow the session's cluster",
		chromedp.Click(chromedp.CSS(`[data-testid="learning-cluster"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="cluster-detail"][data-cluster-id="`+cluster+`"]`)))

	// A session that opted out of learning has no learning card.
	b.do("open the session that opted out",
		chromedp.Click(chromedp.CSS(`[data-testid="session-item"][data-session-id="quiet"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#context`)))
	if evaluate[bool](b, `document.querySelector('[data-testid="session-learning"]') !== null`) {
		t.Error("a session with learning off shows a learning card")
	}

	// Deleting the cluster asks first; the list is then empty.
	b.do("open the cluster again", chromedp.Navigate(s.URL+"/#/clusters/"+cluster), chromedp.WaitVisible(chromedp.CSS(`[data-testid="delete-cluster"]`)))
	b.do("delete the cluster",
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		chromedp.Click(chromedp.CSS(`[data-testid="delete-cluster"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="clusters-empty"]`)))
	if status, _ := s.call(t, http.MethodGet, "/api/clusters/"+cluster, nil); status != http.StatusNotFound {
		t.Errorf("GET the deleted cluster: %d, want 404", status)
	}
	b.checkNoExceptions()
}

// Each memory system's state renders in its own form: the trajectories ICL keeps, the records
// and items of ReasoningBank, the cluster session of Hippocam.
func TestViewerBrowserClusterStates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ system, entry string }{
		{"icl", "state-trajectory"},
		{"reasoning_bank", "state-record"},
		{"hippocam", "state-message"},
	} {
		t.Run(tc.system, func(t *testing.T) {
			t.Parallel()
			s := newLearningServer(t, "", tc.system)
			cluster := s.startTask(t, "t1", "", salesTask)
			s.endTask(t, "t1", `{"feedback":"feedback: status_filter = shipped right"}`)
			b := newBrowser(t)
			b.do("open the cluster",
				chromedp.Navigate(s.URL+"/#/clusters/"+cluster),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="cluster-state"][data-system="`+tc.system+`"]`)))
			if n := evaluate[int](b, `document.querySelectorAll('[data-testid="cluster-state"] [data-testid="`+tc.entry+`"]').length`); n == 0 {
				t.Errorf("the %s state shows no %s", tc.system, tc.entry)
			}
			if evaluate[bool](b, `document.querySelector('[data-testid="state-json"]') !== null`) {
				t.Errorf("the %s state is shown as raw JSON", tc.system)
			}
			if got := b.text(`[data-testid="cluster-state"]`); !strings.Contains(got, "status_filter") {
				t.Errorf("the %s state does not show the task: %q", tc.system, got)
			}
			b.checkNoExceptions()
		})
	}
}

// A numeric cluster shows where its configuration stands, its frozen bindings and its data;
// one whose configuration failed says why.
func TestViewerBrowserNumericClusterState(t *testing.T) {
	t.Parallel()
	task := func(week int, bind string) string {
		return fmt.Sprintf("Weekly sales forecast\n%sobs sales[store=north,week=%d] = %d\nestimate sales[store=north,week=%d]", bind, week, 100+week, week+1)
	}
	for _, tc := range []struct{ name, bind, status, shows string }{
		{"configured", "", "configured", "store"},
		{"failed", "#bind depot=key\n", "failed", "depot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newLearningServer(t, "", "regression")
			cluster := s.startTask(t, "t1", "", task(1, tc.bind))
			s.endTask(t, "t1", `{"feedback":"feedback: sales[store=north,week=2] = 101, outcome sales[store=north,week=2] = 103"}`)
			s.startTask(t, "t2", "", task(2, tc.bind))
			b := newBrowser(t)
			b.do("open the cluster",
				chromedp.Navigate(s.URL+"/#/clusters/"+cluster),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="state-numeric"]`)))
			if got := b.text(`[data-testid="numeric-status"]`); got != tc.status {
				t.Errorf("status %q, want %q", got, tc.status)
			}
			sel := `[data-testid="numeric-bindings"]`
			if tc.status == "failed" {
				sel = `[data-testid="numeric-problem"]`
			}
			if got := b.text(sel); !strings.Contains(got, tc.shows) {
				t.Errorf("%s shows %q, without %q", sel, got, tc.shows)
			}
			b.checkNoExceptions()
		})
	}
}

// getJSON decodes the API's answer to GET path into v.
func (s *learningServer) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	status, body := s.call(t, http.MethodGet, path, nil)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// lessons returns the ids of the lessons a section of the lessons page lists, in order.
func (b *browser) lessons(section string) []string {
	b.t.Helper()
	return evaluate[[]string](b, `[...document.querySelectorAll('[data-testid="`+section+`"] [data-testid="lesson"]')].map(e => e.dataset.lessonId)`)
}

// download clicks the element sel and returns the name the page gave the file it downloads
// and the file's content.
func (b *browser) download(sel string) (name, content string) {
	b.t.Helper()
	dir := b.t.TempDir()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	begin := chromedp.Events(ctx, cdpbrowser.DownloadWillBegin)
	progress := chromedp.Events(ctx, cdpbrowser.DownloadProgress)
	b.do("click "+sel,
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			// The tab's own browser context downloads; the setting is per context.
			_, err := chromedp.Call(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
				Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: new(true),
				BrowserContextID: chromedp.FromContext(ctx).BrowserContextID})
			return err
		}),
		chromedp.Click(chromedp.CSS(sel)))
	for ev, err := range begin {
		if err != nil {
			b.t.Fatalf("waiting for the download: %v", err)
		}
		name = ev.SuggestedFilename
		break
	}
	for ev, err := range progress {
		if err != nil {
			b.t.Fatalf("waiting for the download to finish: %v", err)
		}
		if ev.State == cdpbrowser.DownloadProgressStateCanceled {
			b.t.Fatal("the download was canceled")
		}
		if ev.State != cdpbrowser.DownloadProgressStateCompleted {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, ev.GUID))
		if err != nil {
			b.t.Fatal(err)
		}
		return name, string(data)
	}
	b.t.Fatal("no download")
	return "", ""
}
