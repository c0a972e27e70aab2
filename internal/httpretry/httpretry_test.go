package httpretry

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hippocam/hippocam"
)

// refusal is a minimal Refusal, as a client's status error would be.
type refusal struct {
	status int
	wait   time.Duration
}

func (r *refusal) Error() string                        { return "refused" }
func (r *refusal) UpstreamStatus() (int, time.Duration) { return r.status, r.wait }

var quick = Policy{MaxRetries: 2, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, Timeout: time.Second}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestDoRetriesRefusals(t *testing.T) {
	var numbers []int
	err := Do[*refusal](context.Background(), quick, discard(), "op", "agent", func(a *Attempt) error {
		numbers = append(numbers, a.Number())
		if a.Number() < 3 {
			return &refusal{status: 503}
		}
		return nil
	})
	if err != nil || len(numbers) != 3 || numbers[2] != 3 {
		t.Fatalf("err %v, attempts %v; want success on the third", err, numbers)
	}
}

func TestDoReturnsTheLastRefusal(t *testing.T) {
	for status, want := range map[int]int{400: 1, 429: 3} {
		calls := 0
		last := &refusal{}
		err := Do[*refusal](context.Background(), quick, discard(), "op", "", func(a *Attempt) error {
			calls++
			last = &refusal{status: status}
			return last
		})
		if err != error(last) || calls != want {
			t.Errorf("status %d: err %v after %d calls; want the refusal itself after %d", status, err, calls, want)
		}
	}
}

func TestDoTransientRunsOut(t *testing.T) {
	boom := errors.New("connection reset")
	err := Do[*refusal](context.Background(), quick, discard(), "op", "", func(*Attempt) error {
		return Transient{Err: boom}
	})
	if !errors.Is(err, boom) || hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE ||
		!strings.Contains(err.Error(), "unreachable after 3 attempts") {
		t.Fatalf("err = %v", err)
	}
	perm := errors.New("permanent")
	calls := 0
	err = Do[*refusal](context.Background(), quick, discard(), "op", "", func(*Attempt) error {
		calls++
		return perm
	})
	if err != perm || calls != 1 {
		t.Fatalf("err %v after %d calls; want the error itself after one", err, calls)
	}
}

func TestDoCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	err := Do[*refusal](ctx, quick, discard(), "list", "", func(*Attempt) error {
		cancel()
		return Transient{Err: errors.New("x")}
	})
	if !errors.Is(err, context.Canceled) || hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE ||
		!strings.Contains(err.Error(), "list cancelled") {
		t.Fatalf("err = %v", err)
	}
}

func TestSendExplainsTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	p := quick
	p.MaxRetries = 0
	p.Timeout = 20 * time.Millisecond
	err := Do[*refusal](context.Background(), p, discard(), "op", "", func(a *Attempt) error {
		req, err := http.NewRequestWithContext(a.Context(), http.MethodGet, srv.URL, nil)
		if err != nil {
			return err
		}
		return Send(a, srv.Client(), req, 1<<20,
			func(*http.Response, []byte) error { return &refusal{} },
			func(*http.Response) error { return nil })
	})
	if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE || !strings.Contains(err.Error(), "no progress within 20ms") {
		t.Fatalf("err = %v", err)
	}
}

func TestSendRefusesAndReads(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			http.Error(w, "nope", http.StatusTeapot)
			return
		}
		_, _ = io.WriteString(w, "fine")
	}))
	defer srv.Close()
	send := func(path string) (string, error) {
		var got string
		err := Do[*refusal](context.Background(), quick, discard(), "op", "", func(a *Attempt) error {
			req, _ := http.NewRequestWithContext(a.Context(), http.MethodGet, srv.URL+path, nil)
			return Send(a, srv.Client(), req, 1<<20,
				func(resp *http.Response, b []byte) error {
					got = strings.TrimSpace(string(b))
					return &refusal{status: resp.StatusCode}
				},
				func(resp *http.Response) error {
					b, err := ReadBody(resp.Body, 1<<20)
					got = string(b)
					return err
				})
		})
		return got, err
	}
	if got, err := send("/ok"); err != nil || got != "fine" {
		t.Errorf("ok: %q, %v", got, err)
	}
	var r *refusal
	if got, err := send("/bad"); !errors.As(err, &r) || r.status != http.StatusTeapot || got != "nope" {
		t.Errorf("bad: %q, %v", got, err)
	}
}

func TestBackoff(t *testing.T) {
	p := Policy{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	for n, hi := range map[int]time.Duration{1: 100, 2: 200, 4: 800, 5: 1000, 60: 1000} {
		hi *= time.Millisecond
		for range 20 {
			if d := p.Backoff(n, 0); d < hi/2 || d > hi {
				t.Fatalf("Backoff(%d) = %v, want within [%v, %v]", n, d, hi/2, hi)
			}
		}
	}
	if d := p.Backoff(1, time.Hour); d != time.Second {
		t.Errorf("Backoff with a 1h hint = %v, want MaxBackoff", d)
	}
}

func TestCodeAndRefused(t *testing.T) {
	for status, code := range map[int]string{
		400: hippocam.EINVALID, 401: hippocam.EUNAUTHORIZED, 403: hippocam.EFORBIDDEN,
		409: hippocam.EUNAVAILABLE, 529: hippocam.EUNAVAILABLE, 302: hippocam.EUNAVAILABLE,
	} {
		if got := Code(status); got != code {
			t.Errorf("Code(%d) = %q, want %q", status, got, code)
		}
	}
	e := Refused(429, "Too Many Requests", 3, "slow down")
	if e.Code != hippocam.EUNAVAILABLE || e.Message != "model endpoint answered 429 Too Many Requests after 3 attempts: slow down" {
		t.Errorf("Refused = %+v", e)
	}
}

func TestReadEvents(t *testing.T) {
	body := "event: x\ndata: one\ndata: two\r\n\n: comment\ndata:three"
	a := &Attempt{timer: time.NewTimer(time.Hour), idle: time.Hour}
	var got []string
	var ended error
	err := ReadEvents(strings.NewReader(body), a, 1<<20, func(data []byte) (bool, error) {
		got = append(got, string(data))
		return false, nil
	}, func(rerr error) error {
		ended = rerr
		return nil
	})
	if err != nil || ended != io.EOF || strings.Join(got, "|") != "one\ntwo|three" {
		t.Fatalf("err %v, end %v, events %q", err, ended, got)
	}
	err = ReadEvents(strings.NewReader("data: a\n\ndata: b\n\n"), a, 1<<20, func(data []byte) (bool, error) {
		return string(data) == "a", nil
	}, func(error) error { return errors.New("read past done") })
	if err != nil {
		t.Fatalf("done: err = %v", err)
	}
	err = ReadEvents(strings.NewReader(strings.Repeat("data: x\n", 1000)), a, 100, func([]byte) (bool, error) {
		return false, nil
	}, func(error) error { return nil })
	if hippocam.ErrorCode(err) != hippocam.EUNAVAILABLE {
		t.Fatalf("over the limit: err = %v", err)
	}
}

// Timeout bounds an attempt until its first sign of progress; from then on only IdleTimeout
// bounds each pause, so a long stream that keeps making progress runs past Timeout.
func TestAttemptTimeoutThenIdle(t *testing.T) {
	p := Policy{Timeout: 60 * time.Millisecond, IdleTimeout: 120 * time.Millisecond}
	run := func(pauses ...time.Duration) error {
		return p.attempt(context.Background(), 1, func(a *Attempt) error {
			for _, d := range pauses {
				select {
				case <-time.After(d):
				case <-a.Context().Done():
					return a.Explain(context.Cause(a.Context()))
				}
				a.Touch()
			}
			return nil
		})
	}
	t.Run("OKLongStream", func(t *testing.T) {
		// 10 ms to the first line, then pauses within the idle limit: 400 ms in all.
		if err := run(10*time.Millisecond, 80*time.Millisecond, 80*time.Millisecond, 80*time.Millisecond, 80*time.Millisecond, 80*time.Millisecond); err != nil {
			t.Fatalf("a steady stream failed: %v", err)
		}
	})
	t.Run("ErrFirstByte", func(t *testing.T) {
		err := run(100 * time.Millisecond)
		if !errors.Is(err, hippocam.ErrTimeout) || !strings.Contains(err.Error(), "within 60ms") {
			t.Fatalf("err = %v, want the first-byte timeout", err)
		}
	})
	t.Run("ErrIdle", func(t *testing.T) {
		err := run(10*time.Millisecond, 200*time.Millisecond)
		if !errors.Is(err, hippocam.ErrTimeout) || !strings.Contains(err.Error(), "within 120ms") {
			t.Fatalf("err = %v, want the idle timeout", err)
		}
	})
}
