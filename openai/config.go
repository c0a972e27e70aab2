package openai

import (
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/hippocam/hippocam"
)

// Defaults of DefaultConfig; New also applies them to zero durations.
const (
	DefaultTimeout = 120 * time.Second
	// DefaultIdleTimeout is Config.IdleTimeout when it is zero.
	DefaultIdleTimeout = 120 * time.Second
	DefaultMaxRetries  = 3
	DefaultMinBackoff  = 500 * time.Millisecond
	DefaultMaxBackoff  = 20 * time.Second
	// DefaultRequestCacheBytes is Config.RequestCacheBytes when it is zero: room for the
	// latest requests of a few dozen sessions of 10,000 messages.
	DefaultRequestCacheBytes = 64 << 20
)

// maxResponseBytes bounds the body of a non-streamed answer or an error; maxStreamBytes bounds a
// whole streamed answer. Larger bodies are refused with EUNAVAILABLE.
const (
	maxResponseBytes = 32 << 20
	maxStreamBytes   = 128 << 20
)

// Config says which endpoint a Client talks to and how patiently.
type Config struct {
	// BaseURL is the API root that the paths /chat/completions and /models are appended to,
	// such as https://api.openai.com/v1 or http://localhost:8000/v1. A trailing slash is
	// ignored. Required.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer KEY". Empty sends no Authorization header, for
	// local servers that need none.
	APIKey string
	// Model is the model name put in every request body. Required.
	Model string
	// Timeout bounds one attempt until its answer starts: for a whole answer the whole
	// exchange, for a stream the wait for the response headers and the first line. A stream
	// that has begun is bounded by IdleTimeout instead, however long it runs. Zero means
	// DefaultTimeout.
	Timeout time.Duration
	// IdleTimeout bounds every pause between two lines of a stream that has begun: an upstream
	// that sends nothing for that long fails the attempt. Zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxRetries is how many times a failed attempt is repeated when the failure may pass
	// (network errors, timeouts, 408, 409, 429, 5xx). Unlike the other fields, zero is taken
	// literally: no retries. DefaultConfig sets DefaultMaxRetries.
	MaxRetries int
	// MinBackoff is the wait before the first retry; each later retry waits twice as long, up
	// to MaxBackoff, with random jitter. A Retry-After header from the server replaces the
	// computed wait, still capped by MaxBackoff. Zero means DefaultMinBackoff.
	MinBackoff time.Duration
	// MaxBackoff caps every wait between attempts. Zero means DefaultMaxBackoff.
	MaxBackoff time.Duration
	// HTTPClient sends the requests. Nil means a client of its own with the default
	// transport. Its Timeout, if any, applies on top of Config.Timeout.
	HTTPClient *http.Client
	// Logger receives retries and failures. Nil discards them.
	Logger *slog.Logger
	// RequestCacheBytes bounds the memory the client spends on the encoded messages of its
	// latest requests, which it copies into the next request that repeats them (a session's
	// JANUS and main-model calls share their context, and the next step resends it). Zero means
	// DefaultRequestCacheBytes; negative keeps nothing.
	RequestCacheBytes int
}

// DefaultConfig returns a Config with every default filled in, three retries included; the
// caller sets BaseURL, Model and, usually, APIKey.
func DefaultConfig() Config {
	return Config{
		Timeout:     DefaultTimeout,
		IdleTimeout: DefaultIdleTimeout,
		MaxRetries:  DefaultMaxRetries,
		MinBackoff:  DefaultMinBackoff,
		MaxBackoff:  DefaultMaxBackoff,
	}
}

// withDefaults returns c with its zero durations, client and logger replaced by defaults.
func (c Config) withDefaults() Config {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.RequestCacheBytes == 0 {
		c.RequestCacheBytes = DefaultRequestCacheBytes
	}
	return c
}

// Validate checks c as New would use it (zero durations stand for their defaults). It returns
// EINVALID when BaseURL or Model is empty, when BaseURL is not an absolute http or https URL,
// when MaxRetries or a duration is negative, or when MinBackoff exceeds MaxBackoff.
func (c Config) Validate() error {
	if c.BaseURL == "" {
		return hippocam.Errorf(hippocam.EINVALID, "openai: base URL is required")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return hippocam.Errorf(hippocam.EINVALID, "openai: base URL %q: %v", c.BaseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return hippocam.Errorf(hippocam.EINVALID, "openai: base URL %q must be an http or https URL with a host", c.BaseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return hippocam.Errorf(hippocam.EINVALID, "openai: base URL %q must not have a query or fragment", c.BaseURL)
	}
	if c.Model == "" {
		return hippocam.Errorf(hippocam.EINVALID, "openai: model is required")
	}
	if c.Timeout < 0 || c.IdleTimeout < 0 || c.MinBackoff < 0 || c.MaxBackoff < 0 || c.MaxRetries < 0 {
		return hippocam.Errorf(hippocam.EINVALID, "openai: retries, timeout and backoffs must not be negative")
	}
	d := c.withDefaults()
	if d.MinBackoff > d.MaxBackoff {
		return hippocam.Errorf(hippocam.EINVALID, "openai: min backoff %v exceeds max backoff %v", d.MinBackoff, d.MaxBackoff)
	}
	return nil
}
