package anthropic

import (
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/hippocam/hippocam"
)

// Defaults of DefaultConfig; New also applies them to zero fields (MaxRetries excepted).
const (
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultMaxTokens = 4096
	DefaultTimeout   = 120 * time.Second
	// DefaultIdleTimeout is Config.IdleTimeout when it is zero.
	DefaultIdleTimeout = 120 * time.Second
	DefaultMaxRetries  = 3
	DefaultMinBackoff  = 500 * time.Millisecond
	DefaultMaxBackoff  = 20 * time.Second
)

// maxResponseBytes bounds the body of a non-streamed answer or an error; maxStreamBytes bounds a
// whole streamed answer. Larger bodies are refused with EUNAVAILABLE.
const (
	maxResponseBytes = 32 << 20
	maxStreamBytes   = 128 << 20
)

// Config says which Anthropic endpoint a Client talks to and how patiently.
type Config struct {
	// BaseURL is the API root, such as https://api.anthropic.com; requests go to
	// BaseURL + "/v1/messages", or BaseURL + "/messages" when BaseURL already ends in "/v1".
	// A trailing slash is ignored. Empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as the x-api-key header. Empty sends none, for local servers.
	APIKey string
	// Model is the model put in every request that names none. Required.
	Model string
	// MaxTokens is the max_tokens of a request that gives none (Anthropic requires one). Zero
	// means DefaultMaxTokens.
	MaxTokens int
	// Timeout bounds one attempt until its answer starts: for a whole answer the whole
	// exchange, for a stream the wait for the response headers and the first line. A stream
	// that has begun is bounded by IdleTimeout instead, however long it runs. Zero means
	// DefaultTimeout.
	Timeout time.Duration
	// IdleTimeout bounds every pause between two lines of a stream that has begun: an upstream
	// that sends nothing for that long fails the attempt. Zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxRetries is how many times a failed attempt is repeated when the failure may pass
	// (network errors, timeouts, 408, 409, 429, 5xx and 529). Zero is taken literally: no
	// retries. DefaultConfig sets DefaultMaxRetries.
	MaxRetries int
	// MinBackoff is the wait before the first retry; each later one waits twice as long, up to
	// MaxBackoff, with jitter. A retry-after header replaces the computed wait, still capped by
	// MaxBackoff. Zero means DefaultMinBackoff.
	MinBackoff time.Duration
	// MaxBackoff caps every wait between attempts. Zero means DefaultMaxBackoff.
	MaxBackoff time.Duration
	// NoPromptCache leaves out the cache_control marks the client otherwise puts on the stable
	// prefix of every request.
	NoPromptCache bool
	// HTTPClient sends the requests. Nil means a client of its own with the default transport.
	HTTPClient *http.Client
	// Logger receives retries, failures and what the client had to drop. Nil discards them.
	Logger *slog.Logger
}

// DefaultConfig returns a Config with every default filled in, three retries included; the
// caller sets Model and, usually, APIKey.
func DefaultConfig() Config {
	return Config{
		BaseURL:     DefaultBaseURL,
		MaxTokens:   DefaultMaxTokens,
		Timeout:     DefaultTimeout,
		IdleTimeout: DefaultIdleTimeout,
		MaxRetries:  DefaultMaxRetries,
		MinBackoff:  DefaultMinBackoff,
		MaxBackoff:  DefaultMaxBackoff,
	}
}

// withDefaults returns c with its zero fields replaced by defaults.
func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxTokens
	}
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
	return c
}

// Validate checks c as New would use it (zero fields stand for their defaults). It returns
// EINVALID when Model is empty, when BaseURL is not an absolute http or https URL without query
// or fragment, when MaxTokens, MaxRetries or a duration is negative, or when MinBackoff exceeds
// MaxBackoff.
func (c Config) Validate() error {
	d := c.withDefaults()
	u, err := url.Parse(d.BaseURL)
	if err != nil {
		return hippocam.Errorf(hippocam.EINVALID, "anthropic: base URL %q: %v", d.BaseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return hippocam.Errorf(hippocam.EINVALID, "anthropic: base URL %q must be an http or https URL with a host", d.BaseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return hippocam.Errorf(hippocam.EINVALID, "anthropic: base URL %q must not have a query or fragment", d.BaseURL)
	}
	if c.Model == "" {
		return hippocam.Errorf(hippocam.EINVALID, "anthropic: model is required")
	}
	if c.MaxTokens < 0 || c.Timeout < 0 || c.IdleTimeout < 0 || c.MinBackoff < 0 || c.MaxBackoff < 0 || c.MaxRetries < 0 {
		return hippocam.Errorf(hippocam.EINVALID, "anthropic: max tokens, retries, timeout and backoffs must not be negative")
	}
	if d.MinBackoff > d.MaxBackoff {
		return hippocam.Errorf(hippocam.EINVALID, "anthropic: min backoff %v exceeds max backoff %v", d.MinBackoff, d.MaxBackoff)
	}
	return nil
}
