package viewer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/httpapi"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
	"github.com/hippocam/hippocam/viewer"
)

// The jobs page's script is served, the page loads it and the nav links to the page.
func TestJobsPageServed(t *testing.T) {
	t.Parallel()
	h := viewer.Handler()
	rec := serve(h, httptest.NewRequest(http.MethodGet, "/assets/jobs.js", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Content-Type"), "javascript") ||
		!strings.Contains(rec.Body.String(), "window.hippocamJobs") || !strings.Contains(rec.Body.String(), "'/api/jobs'") {
		t.Fatalf("GET /assets/jobs.js: %d %q, want the jobs page's script", rec.Code, rec.Header().Get("Content-Type"))
	}
	page := serve(h, httptest.NewRequest(http.MethodGet, "/", nil)).Body.String()
	for _, want := range []string{`<script src="/assets/jobs.js" defer></script>`, `href="#/jobs" data-page="jobs"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if app := serve(h, httptest.NewRequest(http.MethodGet, "/assets/app.js", nil)).Body.String(); !strings.Contains(app, "window.hippocamJobs") {
		t.Error("app.js does not draw the jobs page")
	}
}

// The jobs page against a real server: a job whose run failed shows as failed with its error
// and attempts, another is queued, and the tab is marked as the page shown.
func TestViewerBrowserJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := inmem.New()
	tok := tokenizer.MustDefault()
	e, err := engine.New(engine.ForWindow(8000), sim.New(tok).InProcess(), tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, Store: st, Viewer: viewer.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	for _, id := range []string{"broken", "waiting"} {
		s := &hippocam.Session{ID: id} // a server without keys serves the tenant ""
		if err := st.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := st.Commit(ctx, s, hippocam.Change{From: s.Version, Jobs: []hippocam.Job{{Kind: hippocam.JobConsolidate}}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	j, err := st.ClaimJob(ctx, "w", time.Hour)
	if err != nil || j == nil || j.Session != "broken" {
		t.Fatalf("claimed %+v, %v; want broken's job", j, err)
	}
	if err := st.RetryJob(ctx, j, "w", 24*time.Hour, "model: 503 service unavailable"); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t)
	b.do("open the jobs page",
		chromedp.Navigate(ts.URL+"/#/jobs"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="jobs"] [data-testid="job-row"]`)))
	if !evaluate[bool](b, `document.querySelector('[data-testid="nav-jobs"]').classList.contains('active')`) {
		t.Error("the Jobs tab is not marked as the page shown")
	}
	rows := evaluate[[]string](b, `[...document.querySelectorAll('[data-testid="job-row"]')].map(r =>
		[r.querySelector('[data-testid="job-session"]').textContent, r.dataset.state,
		 r.querySelector('[data-testid="job-attempts"]').textContent, r.querySelector('[data-testid="job-error"]').textContent].join('|'))`)
	want := []string{"broken|failed|1|model: 503 service unavailable", "waiting|queued|0|–"}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("the jobs page lists\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if got := b.text(`[data-testid="job-count"]`); got != "2" {
		t.Errorf("job count %q, want 2", got)
	}
	if got := b.text(`[data-testid="job-row"][data-state="failed"] [data-testid="job-due"]`); got != "in 23 h" {
		t.Errorf("the failed job is due %q, want in 23 h", got)
	}
	b.do("open the failed job's session",
		chromedp.Click(chromedp.CSS(`[data-testid="job-row"][data-state="failed"] a[data-testid="job-session"]`)))
	b.waitUntil("the session is open", `location.hash === '#/session/broken'`)
	b.checkNoExceptions()
}
