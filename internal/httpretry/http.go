package httpretry

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"

	"github.com/hippocam/hippocam"
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

// ReadEvents reads the server-sent events of body within attempt a, touching a for every line
// read. The data lines of an event, joined by newlines, go to event once the blank line that
// closes the event arrives, or once the body ends; the slice is valid only during the call.
// Lines other than data lines are skipped.
//
// ReadEvents returns nil as soon as event reports done, event's error as soon as it gives one,
// and EUNAVAILABLE when body runs past limit bytes. When the body ends first it returns what
// end makes of the error that ended it: io.EOF for a body that ended cleanly, another error
// for one that broke off.
func ReadEvents(body io.Reader, a *Attempt, limit int64, event func(data []byte) (done bool, err error), end func(rerr error) error) error {
	lr := &io.LimitedReader{R: body, N: limit + 1}
	br := bufio.NewReaderSize(lr, 64<<10)
	var data bytes.Buffer
	hasData := false
	dispatch := func() (bool, error) {
		if !hasData {
			return false, nil
		}
		hasData = false
		defer data.Reset()
		return event(data.Bytes())
	}
	for {
		line, rerr := br.ReadBytes('\n')
		if len(line) > 0 { // progress; a read that failed with nothing is not
			a.Touch()
		}
		if lr.N <= 0 {
			return hippocam.Errorf(hippocam.EUNAVAILABLE, "model endpoint streamed over %d MiB", limit>>20)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 && rerr == nil {
			if done, err := dispatch(); done || err != nil {
				return err
			}
			continue
		}
		if field, value, ok := bytes.Cut(line, []byte(":")); ok && string(field) == "data" {
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(value, []byte(" ")))
			hasData = true
		}
		if rerr == nil {
			continue
		}
		if done, err := dispatch(); done || err != nil {
			return err
		}
		return end(rerr)
	}
}
