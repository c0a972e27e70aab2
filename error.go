package hippocam

import (
	"errors"
	"fmt"
)

// Error codes. Each transport maps them once: HTTP status and OpenAI error JSON in the proxy,
// a tool error for the model, an exit status in the command line.
const (
	ECONFLICT     = "conflict"    // the state changed underneath, or the thing already exists
	EINTERNAL     = "internal"    // a bug or an unexpected failure; details are logged, not shown
	EINVALID      = "invalid"     // the input breaks a rule; the message says which
	ENOTFOUND     = "not_found"   // no such session, ref or message
	ECAPACITY     = "capacity"    // the request cannot fit the context window even after every sweep
	EUNAVAILABLE  = "unavailable" // the model or the store cannot be reached right now
	EUNAUTHORIZED = "unauthorized"
	EFORBIDDEN    = "forbidden"
)

// Error is Hippocam's error type: a machine-readable code and a message a user may read.
type Error struct {
	Code    string
	Message string
}

// Error implements the error interface.
func (e *Error) Error() string { return fmt.Sprintf("hippocam: %s: %s", e.Code, e.Message) }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for any other error,
// and "" for nil.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the user-facing message of the first *Error in err's chain, or a generic
// text for other errors so that internal details never reach users.
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}
