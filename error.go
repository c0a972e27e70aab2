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
	// Cause, when set, is a sentinel that says more precisely why (ErrStreamCut, ErrTimeout);
	// errors.Is finds it through Unwrap. Its text is not part of Error().
	Cause error
}

// Error implements the error interface.
func (e *Error) Error() string { return fmt.Sprintf("hippocam: %s: %s", e.Code, e.Message) }

// Unwrap returns Cause.
func (e *Error) Unwrap() error { return e.Cause }

// Causes of an EUNAVAILABLE failure of the model that the proxy reports and counts apart; find
// them with errors.Is.
var (
	// ErrStreamCut: the model's stream ended before the format's own end ([DONE],
	// message_stop, response.completed): the connection closed or broke off mid-answer.
	ErrStreamCut = errors.New("the model's stream was cut off")
	// ErrTimeout: an attempt at a model call ran out of time (the upstream timeout, or the idle
	// limit of a stream).
	ErrTimeout = errors.New("the model call timed out")
)

// CapacityError is the ECAPACITY error of a request that cannot fit the context window: the
// tokens it needs and the window, so that each transport can say it in its provider's words.
// It unwraps to its *Error, so ErrorCode and ErrorMessage read it as any other.
type CapacityError struct {
	Needed int // tokens the request needs, the room kept for the answer included
	Window int // the context window it must fit
	Err    *Error
}

// Capacityf returns a *CapacityError of code ECAPACITY with a formatted message.
func Capacityf(needed, window int, format string, args ...any) *CapacityError {
	return &CapacityError{Needed: needed, Window: window, Err: Errorf(ECAPACITY, format, args...)}
}

// Error returns the text of Err.
func (e *CapacityError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *CapacityError) Unwrap() error { return e.Err }

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
