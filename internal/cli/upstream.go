package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/hippocam/hippocam"
)

// upstreamAPIKey is the upstream's API key for its format, from the environment:
// HIPPOCAM_UPSTREAM_API_KEY, else the provider's usual variable (OPENAI_API_KEY,
// ANTHROPIC_API_KEY). An error names a format that is neither.
func upstreamAPIKey(format string) (string, error) {
	switch format {
	case "openai":
		return env("HIPPOCAM_UPSTREAM_API_KEY", os.Getenv("OPENAI_API_KEY")), nil
	case "anthropic":
		return env("HIPPOCAM_UPSTREAM_API_KEY", os.Getenv("ANTHROPIC_API_KEY")), nil
	}
	return "", fmt.Errorf("--upstream-format must be openai or anthropic, not %q", format)
}

// upstreamFormatOf is the wire format an --upstream-format value names.
func upstreamFormatOf(format string) hippocam.Format {
	if format == "anthropic" {
		return hippocam.FormatAnthropic
	}
	return hippocam.FormatChat
}

// newLogger logs to w as text, or as JSON lines.
func newLogger(w io.Writer, asJSON bool) *slog.Logger {
	if asJSON {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}
