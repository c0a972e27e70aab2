package sqlstore

import (
	"encoding/json"
	"time"

	"github.com/hippocam/hippocam"
)

// EncodeNewSession checks that s can be stored as a new session and returns its snapshot fields
// as JSON. EINVALID for a nil session, an empty id, a context that is not empty (messages enter
// through a commit), or a snapshot field that does not encode.
func EncodeNewSession[T Text](s *hippocam.Session) (Snapshot[T], error) {
	if s == nil || s.ID == "" {
		return Snapshot[T]{}, hippocam.Errorf(hippocam.EINVALID, "a session needs an id")
	}
	if len(s.Context) > 0 {
		return Snapshot[T]{}, hippocam.Errorf(hippocam.EINVALID, "a new session's context must be empty; append messages with a commit")
	}
	return EncodeSnapshot[T](s)
}

// CreatedAt returns the creation time to store for the new session s: its CreatedAt in UTC to
// the microsecond, or now if it has none.
func CreatedAt(s *hippocam.Session, now time.Time) time.Time {
	if s.CreatedAt.IsZero() {
		return now
	}
	return s.CreatedAt.UTC().Truncate(time.Microsecond)
}

// SessionExists returns the ECONFLICT error for creating a session whose id is taken.
func SessionExists(id string) error {
	return hippocam.Errorf(hippocam.ECONFLICT, "session %q exists", id)
}

// ForkColumn is the sessions.fork value of s: its Transcript.Fork as JSON, or "" for a session
// that is no fork.
func ForkColumn(s *hippocam.Session) string {
	if s.Transcript.Fork == nil {
		return ""
	}
	b, _ := json.Marshal(s.Transcript.Fork)
	return string(b)
}

// ParseFork reads a sessions.fork value.
func ParseFork(col string) *hippocam.Fork {
	if col == "" {
		return nil
	}
	var f hippocam.Fork
	if json.Unmarshal([]byte(col), &f) != nil {
		return nil
	}
	return &f
}

// ClientColumn is the sessions.client value of s: its Transcript.Client as JSON, or "" when it
// has none.
func ClientColumn(s *hippocam.Session) string {
	if s.Transcript.Client == nil {
		return ""
	}
	b, _ := json.Marshal(s.Transcript.Client)
	return string(b)
}

// ParseClient reads a sessions.client value.
func ParseClient(col string) *hippocam.Client {
	if col == "" {
		return nil
	}
	var c hippocam.Client
	if json.Unmarshal([]byte(col), &c) != nil {
		return nil
	}
	return &c
}

// Snapshot is a session's snapshot fields (Stack, StackLog, Rounds, Usage, Consolidations,
// Transcript, Pending) as the JSON of the sessions columns that hold them, in the driver's Text
// type. A nil Pending is the JSON null, and reads back nil.
type Snapshot[T Text] struct {
	Stack, StackLog, Rounds, Usage, Consolidations, Transcript, Pending T
}

// EncodeSnapshot returns s's snapshot fields as JSON. EINVALID if a field does not encode.
func EncodeSnapshot[T Text](s *hippocam.Session) (Snapshot[T], error) {
	var snap Snapshot[T]
	for _, f := range []struct {
		dst *T
		v   any
	}{
		{&snap.Stack, s.Stack},
		{&snap.StackLog, s.StackLog},
		{&snap.Rounds, s.Rounds},
		{&snap.Usage, s.Usage},
		{&snap.Consolidations, s.Consolidations},
		{&snap.Transcript, s.Transcript},
		{&snap.Pending, s.Pending},
	} {
		b, err := json.Marshal(f.v)
		if err != nil {
			return snap, hippocam.Errorf(hippocam.EINVALID, "session %q: %v", s.ID, err)
		}
		*f.dst = T(b)
	}
	return snap, nil
}

// Decode sets s's snapshot fields from snap. The error is the JSON decoder's, for a column
// that does not hold what EncodeSnapshot wrote.
func (snap Snapshot[T]) Decode(s *hippocam.Session) error {
	for _, f := range []struct {
		src T
		v   any
	}{
		{snap.Stack, &s.Stack},
		{snap.StackLog, &s.StackLog},
		{snap.Rounds, &s.Rounds},
		{snap.Usage, &s.Usage},
		{snap.Consolidations, &s.Consolidations},
		{snap.Transcript, &s.Transcript},
		{snap.Pending, &s.Pending},
	} {
		if err := json.Unmarshal([]byte(f.src), f.v); err != nil {
			return err
		}
	}
	return nil
}
