package viewer_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/viewer"
)

func TestHandler(t *testing.T) {
	h := viewer.Handler()

	t.Run("OK", func(t *testing.T) {
		for _, tc := range []struct {
			path, ctype, contains string
		}{
			{"/", "text/html", `<script src="/assets/app.js"`},
			{"/assets/app.js", "javascript", "'use strict'"},
			{"/assets/style.css", "text/css", ":root"},
			{"/assets/learning.js", "javascript", "window.hippocamLearning"},
		} {
			rec := serve(h, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != http.StatusOK {
				t.Fatalf("GET %s: status %d", tc.path, rec.Code)
			}
			if got := rec.Header().Get("Content-Type"); !strings.Contains(got, tc.ctype) {
				t.Errorf("GET %s: Content-Type %q, want %s", tc.path, got, tc.ctype)
			}
			if !strings.Contains(rec.Body.String(), tc.contains) {
				t.Errorf("GET %s: body lacks %q", tc.path, tc.contains)
			}
			if rec.Header().Get("ETag") == "" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("GET %s: headers %v", tc.path, rec.Header())
			}
		}
	})

	t.Run("ContentSecurityPolicy", func(t *testing.T) {
		csp := serve(h, httptest.NewRequest(http.MethodGet, "/", nil)).Header().Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self'", "connect-src 'self'", "default-src 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("CSP %q lacks %q", csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("CSP %q allows unsafe sources", csp)
		}
	})

	t.Run("NotModified", func(t *testing.T) {
		etag := serve(h, httptest.NewRequest(http.MethodGet, "/assets/app.js", nil)).Header().Get("ETag")
		req := httptest.NewRequest(http.MethodGet, "/assets/app.js", nil)
		req.Header.Set("If-None-Match", etag)
		rec := serve(h, req)
		if rec.Code != http.StatusNotModified {
			t.Fatalf("status %d, want 304", rec.Code)
		}
	})

	t.Run("Head", func(t *testing.T) {
		rec := serve(h, httptest.NewRequest(http.MethodHead, "/", nil))
		if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
			t.Fatalf("HEAD /: status %d, %d body bytes", rec.Code, rec.Body.Len())
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		for _, path := range []string{"/nope", "/assets/", "/assets/missing.js", "/static/index.html", "/assets/../index.html"} {
			if rec := serve(h, httptest.NewRequest(http.MethodGet, path, nil)); rec.Code != http.StatusNotFound {
				t.Errorf("GET %s: status %d, want 404", path, rec.Code)
			}
		}
	})

	t.Run("ErrMethod", func(t *testing.T) {
		rec := serve(h, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("x")))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") == "" {
			t.Fatalf("POST /: status %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
		}
	})
}

func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
