package httpretry

import (
	"errors"
	"io"
	"net/http"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/internal/sse"
)

// Send makes the HTTP exchange of attempt a: it sends req, which should carry a's Context,
// with hc. When no answer comes the error is Transient. An answer with a status other than 2xx
// gives what refuse makes of it and of up to limit bytes of its body (normally the client's
// Refusal); a 2xx answer gives what read returns. A Transient error gets a note that the
// attempt timed out when it did (see Attempt.Explain). Afterwards the rest of the body is
// drained a little and closed, so that the connection can serve again.
func Send(a *Attempt, hc *http.Client, req *http.Request, limit int64, refuse func(resp *http.Response, body []byte) error, read func(resp *http.Response) error) error {
	resp, err := hc.Do(req)
	if err != nil {
		return Transient{Err: a.Explain(err)}
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, limit))
		return refuse(resp, b)
	}
	if err := read(resp); err != nil {
		var tr Transient
		if errors.As(err, &tr) {
			return Transient{Err: a.Explain(tr.Err)}
		}
		return err
	}
	return nil
}

// ReadBody reads all of r, at most limit bytes. A failed read is Transient; a longer body is
// EUNAVAILABLE.
func ReadBody(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, Transient{Err: err}
	}
	if int64(len(b)) > limit {
		return nil, hippocam.Errorf(hippocam.EUNAVAILABLE, "model endpoint sent an answer over %d MiB", limit>>20)
	}
	return b, nil
}

// ReadEvents reads the server-sent events of body (sse.Reader) within attempt a, touching a
// whenever bytes arrive. The data of each event goes to event once the blank line that closes
// the event arrives, or once the body ends; the slice is valid only during the call.
//
// ReadEvents returns nil as soon as event reports done, event's error as soon as it gives one,
// and EUNAVAILABLE when body runs past limit bytes. When the body ends first it returns what
// end makes of the error that ended it: io.EOF for a body that ended cleanly, another error
// for one that broke off.
func ReadEvents(body io.Reader, a *Attempt, limit int64, event func(data []byte) (done bool, err error), end func(rerr error) error) error {
	lr := &io.LimitedReader{R: body, N: limit + 1}
	r := sse.NewReader(touchReader{lr, a})
	for {
		ev, rerr := r.Next()
		if lr.N <= 0 {
			return hippocam.Errorf(hippocam.EUNAVAILABLE, "model endpoint streamed over %d MiB", limit>>20)
		}
		if ev.Data != nil {
			if done, err := event(ev.Data); done || err != nil {
				return err
			}
		}
		if rerr != nil {
			return end(rerr)
		}
	}
}

// touchReader touches its attempt whenever a read brings bytes: progress, which a read that
// fails with nothing is not.
type touchReader struct {
	r io.Reader
	a *Attempt
}

func (t touchReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.a.Touch()
	}
	return n, err
}
