package httpapi

import (
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
)

// PassThrough configures the routes under /v1 that Hippocam does not answer itself (embeddings,
// models, completions, files, moderations, audio, images, batches…): they go to the upstream as
// they came, bodies streamed both ways.
type PassThrough struct {
	// BaseURL is the upstream's base URL, as for the model client: an OpenAI-format one ends
	// with its version (https://api.openai.com/v1); an Anthropic one may leave it out
	// (https://api.anthropic.com). A client's /v1/X goes to BaseURL/X.
	BaseURL string
	// Anthropic says the upstream speaks Anthropic's API: Hippocam's key goes in x-api-key
	// (with an anthropic-version header when the client sent none), not Authorization.
	Anthropic bool
	// APIKey is Hippocam's upstream key. It is sent when the client authenticated to Hippocam
	// with a tenant key (Config.Keys), and when a client of a server without keys sent none.
	APIKey string
	// Client's transport carries the requests (http.DefaultTransport when nil).
	Client *http.Client
	// Timeout bounds the wait for the upstream's response headers (0: no bound); the body then
	// streams for as long as it lasts.
	Timeout time.Duration
}

// tenantRoutes are the routes passed through when Hippocam has tenant keys: calls that keep
// nothing on the upstream's account. Routes that store or list things there (files, batches,
// uploads, vector stores, fine-tuning, assistants…) would let every tenant reach what the others
// left under the operator's one key, so with tenant keys they are refused (403).
var tenantRoutes = []string{"/v1/models", "/v1/embeddings", "/v1/completions", "/v1/moderations",
	"/v1/audio/speech", "/v1/audio/transcriptions", "/v1/audio/translations",
	"/v1/images/generations", "/v1/images/edits", "/v1/images/variations"}

// tenantRoute reports whether path may be passed through for a tenant.
func tenantRoute(path string) bool {
	for _, r := range tenantRoutes {
		if path == r || strings.HasPrefix(path, r+"/") {
			return true
		}
	}
	return false
}

// anthropicVersion is the API version sent to an Anthropic upstream for a client that named none.
const anthropicVersion = "2023-06-01"

// newPassThrough returns the reverse proxy for p. EINVALID when the base URL is not absolute.
func newPassThrough(p *PassThrough, keyed bool) (*httputil.ReverseProxy, error) {
	base, err := url.Parse(strings.TrimRight(p.BaseURL, "/"))
	if err != nil || base.Scheme == "" || base.Host == "" {
		return nil, hippocam.Errorf(hippocam.EINVALID, "httpapi: the pass-through base URL %q is not an absolute URL", p.BaseURL)
	}
	if p.Anthropic && !strings.HasSuffix(base.Path, "/v1") {
		base.Path += "/v1"
	}
	var transport http.RoundTripper = http.DefaultTransport
	if p.Client != nil && p.Client.Transport != nil {
		transport = p.Client.Transport
	}
	if t, ok := transport.(*http.Transport); ok && p.Timeout > 0 {
		t = t.Clone()
		t.ResponseHeaderTimeout = p.Timeout
		transport = t
	}
	rp := &httputil.ReverseProxy{
		Transport:     transport,
		FlushInterval: -1, // every write at once: server-sent events pass through as they come
		Rewrite: func(pr *httputil.ProxyRequest) {
			out := pr.Out
			out.URL.Scheme, out.URL.Host = base.Scheme, base.Host
			out.URL.Path = base.Path + strings.TrimPrefix(pr.In.URL.Path, "/v1")
			out.URL.RawPath = ""
			out.Host = base.Host
			out.Header.Del(SessionHeader)
			credentials(out.Header, p, keyed)
		},
		ModifyResponse: func(resp *http.Response) error {
			if (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && sentOwnKey(resp.Request.Header, p) {
				return errOwnKeyRefused // the provider's text may quote the key: proxyError answers instead
			}
			return nil
		},
	}
	return rp, nil
}

// credentials sets the upstream credentials of a passed-through request. With tenant keys the
// client's key is Hippocam's business only: it is removed and Hippocam's upstream key sent in
// its place. Without, the client's own credentials go on; Hippocam's key is sent only to a client
// that sent none.
func credentials(h http.Header, p *PassThrough, keyed bool) {
	if keyed {
		h.Del("Authorization")
		for _, k := range keyHeaders {
			h.Del(k)
		}
	} else if sentCredentials(h) {
		return
	}
	if p.APIKey == "" {
		return
	}
	if p.Anthropic {
		h.Set("X-Api-Key", p.APIKey)
		if h.Get("Anthropic-Version") == "" {
			h.Set("Anthropic-Version", anthropicVersion)
		}
		return
	}
	h.Set("Authorization", "Bearer "+p.APIKey)
}

// errOwnKeyRefused is the upstream refusing the key Hippocam sent on a client's behalf.
var errOwnKeyRefused = errors.New("the upstream refused Hippocam's own key")

// sentOwnKey reports whether the outgoing headers h carry Hippocam's upstream key.
func sentOwnKey(h http.Header, p *PassThrough) bool {
	if p.APIKey == "" {
		return false
	}
	return h.Get("Authorization") == "Bearer "+p.APIKey || h.Get("X-Api-Key") == p.APIKey
}

// passThrough serves a route under /v1 that Hippocam does not answer itself: to the upstream
// when one is configured (Config.PassThrough), else a 404 in the error JSON of the path's format.
// A path of Hippocam's own routes with another method is a 405 either way.
func (s *Server) passThrough(w http.ResponseWriter, r *http.Request, tenant string) {
	if _, ok := knownPaths[strings.TrimSuffix(r.URL.Path, "/")]; ok || s.proxy == nil {
		s.missing(w, r, tenant)
		return
	}
	if len(s.cfg.Keys) > 0 && !tenantRoute(strings.TrimSuffix(r.URL.Path, "/")) {
		s.fail(w, r, formatOf(r.URL.Path), hippocam.Errorf(hippocam.EFORBIDDEN,
			"%s is not passed through for tenants: it would act on the operator's upstream account, which all tenants share", r.URL.Path))
		return
	}
	// Both ways at once: a body that streams up while the answer streams down (HTTP/1.1 would
	// otherwise stop reading the request once the response starts).
	_ = http.NewResponseController(w).EnableFullDuplex()
	defer func() {
		// An answer cut while its body was being copied: ReverseProxy aborts the handler, after
		// headers that said 200. It is logged and counted before the abort goes on.
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				name, _ := headerName(r)
				s.refused(r, name, refusal{status: http.StatusBadGateway, cause: causeStreamCut,
					message: "the upstream's answer was cut while it was passed on"}, nil)
			}
			panic(v)
		}
	}()
	s.proxy.ServeHTTP(w, r)
	if rec, ok := w.(*statusRecorder); ok && rec.status >= 400 {
		// The upstream's own refusal, passed on as it came: logged and counted like Hippocam's.
		name, _ := headerName(r)
		s.refused(r, name, refusal{status: rec.status, cause: causeUpstream + strconv.Itoa(rec.status),
			message: "the upstream answered " + strconv.Itoa(rec.status)}, nil)
	}
	// A body the upstream never read (it failed, or answered first) is read out here, while the
	// handler still owns the connection: in full duplex nothing else may read it afterwards.
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxDrainBytes))
}

// passThroughFormat is the format of the pass-through's upstream.
func (s *Server) passThroughFormat() hippocam.Format {
	if s.cfg.PassThrough.Anthropic {
		return hippocam.FormatAnthropic
	}
	return hippocam.FormatChat
}

// maxDrainBytes bounds what is read of a passed-through body the upstream left unread; a longer
// one closes the connection instead.
const maxDrainBytes = 1 << 20

// proxyError answers a pass-through the upstream did not answer (unreachable, or cut before its
// headers) with a 502 in the error JSON of the path's format.
func (s *Server) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Warn("pass-through failed", "path", r.URL.Path, "error", err)
	format := formatOf(r.URL.Path)
	if up := s.passThroughFormat(); inboundOf(up).sentBy(r) {
		format = up // a client of the upstream's own format, on a path of no format's
	}
	if errors.Is(err, errOwnKeyRefused) {
		s.fail(w, r, format, hippocam.Errorf(hippocam.EUNAVAILABLE,
			"the upstream refused Hippocam's credentials for %s; the operator must check the upstream API key", r.URL.Path))
		return
	}
	s.fail(w, r, format, hippocam.Errorf(hippocam.EUNAVAILABLE, "the upstream could not be reached for %s %s", r.Method, r.URL.Path))
}
