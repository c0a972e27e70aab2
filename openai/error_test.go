package openai

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"None", nil, 0},
		{"Seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{"FractionalSeconds", map[string]string{"Retry-After": "0.25"}, 250 * time.Millisecond},
		{"Date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"PastDate", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"Milliseconds", map[string]string{"Retry-After-Ms": "1500", "Retry-After": "9"}, 1500 * time.Millisecond},
		{"Garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"Negative", map[string]string{"Retry-After": "-4"}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := retryAfter(h, now); got != tt.want {
				t.Errorf("retryAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseErrorBody(t *testing.T) {
	for _, tt := range []struct {
		name, body, message, code string
	}{
		{"OpenAI", `{"error":{"message":"bad key","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, "bad key", "invalid_api_key"},
		{"NumericCode", `{"error":{"code":400,"message":"too long","type":"invalid_request_error"}}`, "too long", "400"},
		{"Flat", `{"object":"error","message":"no such model","type":"NotFoundError","code":404}`, "no such model", "404"},
		{"StringError", `{"error":"model \"x\" not found"}`, `model "x" not found`, ""},
		{"PlainText", "  upstream connect error  \n", "upstream connect error", ""},
		{"Long", strings.Repeat("é", 600), strings.Repeat("é", 256) + "…", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := parseErrorBody([]byte(tt.body))
			if e.Error.Message != tt.message {
				t.Errorf("message = %q, want %q", e.Error.Message, tt.message)
			}
			code := ""
			if e.Error.Code != nil {
				code = *e.Error.Code
			}
			if code != tt.code {
				t.Errorf("code = %q, want %q", code, tt.code)
			}
		})
	}
}

func TestStatusError(t *testing.T) {
	for status, code := range map[int]string{
		400: hippocam.EINVALID, 401: hippocam.EUNAUTHORIZED, 403: hippocam.EFORBIDDEN,
		404: hippocam.EINVALID, 408: hippocam.EUNAVAILABLE, 409: hippocam.EUNAVAILABLE,
		429: hippocam.EUNAVAILABLE, 500: hippocam.EUNAVAILABLE, 503: hippocam.EUNAVAILABLE,
		302: hippocam.EUNAVAILABLE,
	} {
		var err error = &StatusError{Status: status}
		if got := hippocam.ErrorCode(err); got != code {
			t.Errorf("status %d: code = %q, want %q", status, got, code)
		}
		wrapped := errors.Join(errors.New("context"), err)
		var se *StatusError
		if !errors.As(wrapped, &se) || se.Status != status {
			t.Errorf("status %d: errors.As failed", status)
		}
	}
}

func TestBackoff(t *testing.T) {
	c, err := New(Config{BaseURL: "http://h/v1", Model: "m", MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for n, hi := range map[int]time.Duration{1: 100, 2: 200, 3: 400, 4: 800, 5: 1000, 40: 1000} {
		hi *= time.Millisecond
		for range 50 {
			if d := c.backoff(n, nil); d < hi/2 || d > hi {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", n, d, hi/2, hi)
			}
		}
	}
	if d := c.backoff(1, &StatusError{Status: 429, RetryAfter: 300 * time.Millisecond}); d != 300*time.Millisecond {
		t.Errorf("Retry-After 300ms: backoff = %v", d)
	}
	if d := c.backoff(1, &StatusError{Status: 429, RetryAfter: time.Hour}); d != time.Second {
		t.Errorf("Retry-After 1h: backoff = %v, want MaxBackoff", d)
	}
}
