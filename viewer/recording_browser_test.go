package viewer_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A session the server recorded (serve --record) links its recording in its header; one without
// a recording has no link. With an API key, following the link fetches the file with the key.
func TestViewerBrowserRecording(t *testing.T) {
	t.Parallel()
	const key = "rec-key"
	api := newFakeAPI(t, key)
	api.recording = `{"time":"2026-12-05T10:00:00Z","session":"billing-fix","role":"agent"}` + "\n"
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	b := newBrowser(t)

	b.do("open the page and enter the key", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#api-key`)),
		chromedp.SendKeys(chromedp.CSS(`#api-key`), key),
		chromedp.Click(chromedp.CSS(`#api-key-save`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="session-item"][data-session-id="scratch"]`)))
	b.do("open scratch", chromedp.Click(chromedp.CSS(`[data-testid="session-item"][data-session-id="scratch"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#session-title[data-session-id="scratch"]`)))
	if n := evaluate[int](b, `document.querySelectorAll('[data-testid="recording-link"]').length`); n != 0 {
		t.Errorf("a session without a recording shows %d recording links", n)
	}
	b.do("open billing-fix", chromedp.Click(chromedp.CSS(`[data-testid="session-item"][data-session-id="billing-fix"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="recording-link"]`)))
	if got := evaluate[string](b, `document.querySelector('[data-testid="recording-link"]').getAttribute('href')`); got != "/api/sessions/billing-fix/recording" {
		t.Errorf("the link goes to %q", got)
	}
	if got := b.text(`[data-testid="recording-link"]`); !strings.HasPrefix(got, "recording (") {
		t.Errorf("the link reads %q", got)
	}
	b.do("follow the link", chromedp.Click(chromedp.CSS(`[data-testid="recording-link"]`)))
	deadline := time.Now().Add(stepTimeout)
	for api.Count("GET", "/api/sessions/billing-fix/recording") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("following the link fetched no recording")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, r := range api.Requests() {
		if r.Path == "/api/sessions/billing-fix/recording" && r.Auth != "Bearer "+key {
			t.Errorf("the recording was fetched with Authorization %q", r.Auth)
		}
	}
	b.checkNoExceptions()
}
